package bench

func useAVX2Flag() bool { return useAVX2 }
func setAVX2(v bool)    { useAVX2 = v }
