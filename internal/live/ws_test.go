package live

import (
	"testing"

	"github.com/numascope/numascope/internal/web"
	"github.com/numascope/numascope/internal/web/webtest"
)

// wsClient, dial, wsURL and typeIs are webtest's, on this package's servers.
type wsClient = webtest.Client

// dial connects with token, or with the server's own when token is "".
func dial(t *testing.T, s *web.Server, token string) *wsClient {
	t.Helper()
	if token == "" {
		token = s.Token()
	}
	return webtest.Dial(t, s.Addr().String(), token)
}

func wsURL(s *web.Server, token string) string { return webtest.URL(s.Addr().String(), token) }

var typeIs = webtest.TypeIs
