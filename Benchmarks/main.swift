// The benchmark target: see issue #4. Filled in by the benchmarks work.
print("ImageCacheBenchmarks: nothing measured yet")
