package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

func TestDrv(t *testing.T) {
	dirs, _ := filepath.Glob("/tmp/fx/*/*")
	for _, d := range dirs {
		if os.Getenv("ONLY") != "" && filepath.Base(filepath.Dir(d)) != os.Getenv("ONLY") { continue }
		top, err := Discover(sysfs.New(d))
		if err != nil { fmt.Println(d, err); continue }
		fmt.Printf("=================== %s\n", filepath.Base(filepath.Dir(d)))
		top.WriteText(os.Stdout)
	}
}
