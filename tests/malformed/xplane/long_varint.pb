
/device:GPU:0ÿÿÿÿÿÿÿÿÿÿ