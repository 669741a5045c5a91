// Package loopback tells a listen address that only this machine can reach
// from one that others can: every server of numascope (live, view, the
// exporter) warns or refuses on the second, and it is kept apart from them
// so that each asks it in the same words.
package loopback

import "net"

// Only reports whether a listen address binds only loopback interfaces:
// "localhost", 127.0.0.0/8 or ::1. An empty host binds all.
func Only(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
