
/device:GPU:0"abc