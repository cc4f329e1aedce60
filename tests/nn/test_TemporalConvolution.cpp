// test_TemporalConvolution.cpp
