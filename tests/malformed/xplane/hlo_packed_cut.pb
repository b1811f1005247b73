
W/host:metadata"2.jit_f(1)* 2

fusion.1fusion¢Å*	Hlo Proto