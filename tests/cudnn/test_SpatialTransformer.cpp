// test_SpatialTransformer.cpp (written next)
