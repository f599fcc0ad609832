import Foundation
import ImageCache
print("placeholder")
