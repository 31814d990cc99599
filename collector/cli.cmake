# The gpuattr executable and its socket ingest (see collector/CMakeLists.txt).
