package loopback

import "testing"

func TestOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost:1": true, "[::1]:8080": true, "127.9.9.9:1": true,
		"0.0.0.0:80": false, ":8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false, "nonsense": false,
	} {
		if got := Only(addr); got != want {
			t.Errorf("Only(%q) = %v, want %v", addr, got, want)
		}
	}
}
