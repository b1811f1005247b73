
?/host:metadata"jit_f(1)*2ÿÿÿÿ*	Hlo Proto