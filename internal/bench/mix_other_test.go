//go:build !amd64

package bench

import "testing"

func checkMixAsm(*testing.T) {}
