
/device:GPU:0""