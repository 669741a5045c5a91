//go:build !amd64

package bench

func useAVX2Flag() bool { return false }
func setAVX2(bool)      {}
