package perfevent

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// CPUID identifies a CPU model the way event tables do.
type CPUID struct {
	Vendor string // vendor_id: GenuineIntel, AuthenticAMD, HygonGenuine
	Family int
	Model  int
}

func (c CPUID) String() string {
	return fmt.Sprintf("%s family %d (0x%x) model %d (0x%x)", c.Vendor, c.Family, c.Family, c.Model, c.Model)
}

// ParseCPUInfo reads the identity of the first processor in /proc/cpuinfo
// content. ok is false when the file has no x86 identity (other
// architectures print different fields; they have no presets here).
func ParseCPUInfo(data []byte) (id CPUID, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var haveFam, haveModel bool
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if id.Vendor != "" {
				break // end of the first processor
			}
			continue
		}
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "vendor_id":
			if id.Vendor == "" {
				id.Vendor = v
			}
		case "cpu family":
			if n, err := strconv.Atoi(v); err == nil && !haveFam {
				id.Family, haveFam = n, true
			}
		case "model":
			if n, err := strconv.Atoi(v); err == nil && !haveModel {
				id.Model, haveModel = n, true
			}
		}
	}
	return id, id.Vendor != "" && haveFam && haveModel
}

// ReadCPUID reads the CPU identity from the FS's /proc/cpuinfo.
func ReadCPUID(fs sysfs.FS) (CPUID, error) {
	data, err := sysfs.ReadFile(fs.Proc("cpuinfo"))
	if err != nil {
		return CPUID{}, err
	}
	id, ok := ParseCPUInfo(data)
	if !ok {
		return id, fmt.Errorf("%s has no x86 vendor_id/cpu family/model: presets cover x86 server CPUs only", fs.Proc("cpuinfo"))
	}
	return id, nil
}
