
a/host:metadata"<8jit_f(1)**2&
È
jit_f
main
fusion.1fusion*	Hlo Proto