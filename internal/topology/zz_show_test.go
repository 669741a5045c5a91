package topology

import (
	"os"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

func TestShow(t *testing.T) {
	top, err := Discover(sysfs.New(os.Getenv("ROOT")))
	if err != nil { t.Fatal(err) }
	top.WriteText(os.Stdout)
}
