// test_SpatialFullConvolution.cpp
