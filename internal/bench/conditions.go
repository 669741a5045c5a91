package bench

import (
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Conditions are what can make a measurement surprising: a CPU that
// changes its clock, huge pages or not, NUMA balancing moving pages
// underneath, a hypervisor between the benchmark and the memory.
type Conditions struct {
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	// Governors are the cpufreq governors of the CPUs used, sorted;
	// empty when the kernel has no cpufreq (common in VMs).
	Governors []string `json:"governors"`
	// SMT is the kernel's SMT control (/sys/devices/system/cpu/smt/control:
	// on, off, forceoff, notsupported or notimplemented), "" when unknown:
	// with SMT on, two CPUs may be one core's threads, and a figure taken on
	// one is slowed by its sibling's work.
	SMT string `json:"smt"`
	// THP is transparent_hugepage/enabled's chosen mode (always, madvise
	// or never), "" when unknown.
	THP string `json:"thp"`
	// NUMABalancing is kernel.numa_balancing before the run; "" when the
	// kernel has none.
	NUMABalancing string `json:"numa_balancing"`
	// NUMABalancingOff says that numascope turned it off for the run (as
	// root) and restored it after.
	NUMABalancingOff bool `json:"numa_balancing_off_during_run"`
	// Virtual is true when a hypervisor is seen (the CPU's hypervisor flag,
	// or the DMI vendor of a known one); Hypervisor names it when known.
	Virtual    bool   `json:"virtual"`
	Hypervisor string `json:"hypervisor,omitempty"`
	SysVendor  string `json:"sys_vendor,omitempty"`
	Product    string `json:"product_name,omitempty"`
	Root       bool   `json:"root"`
	// KernelISA is the instruction set of the bandwidth kernels.
	KernelISA string `json:"kernel_isa"`
	// LLCBytes is the initiators' largest last-level cache, from the
	// topology's sysfs caches (0: unknown); --size below 4× it is
	// flagged.
	LLCBytes uint64 `json:"llc_bytes"`
	// HostLoad is what else ran on the machine during the run (null:
	// /proc/stat could not be read).
	HostLoad *HostLoad `json:"host_load"`
}

// conditionPaths are where the conditions are read; tests point them at
// files of their own.
var conditionPaths = struct {
	cpuinfo, thp, balancing, dmi, hypervisor, cpufreq, stat, loadavg, smt string
}{
	smt:        "/sys/devices/system/cpu/smt/control",
	cpuinfo:    "/proc/cpuinfo",
	thp:        "/sys/kernel/mm/transparent_hugepage/enabled",
	balancing:  "/proc/sys/kernel/numa_balancing",
	dmi:        "/sys/class/dmi/id",
	hypervisor: "/sys/hypervisor/type",
	cpufreq:    "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
	stat:       "/proc/stat",
	loadavg:    "/proc/loadavg",
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// thpBracket matches the chosen mode in "always [madvise] never".
var thpBracket = regexp.MustCompile(`\[(\w+)\]`)

// readConditions reads the conditions for a run on cpus.
func readConditions(cpus []int) Conditions {
	c := Conditions{Root: os.Geteuid() == 0, KernelISA: KernelISA()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		c.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	info := readTrim(conditionPaths.cpuinfo)
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case c.CPUModel == "" && (k == "model name" || k == "Model" || k == "cpu model" || k == "cpu"):
			c.CPUModel = v
		case k == "flags" && !c.Virtual:
			for _, f := range strings.Fields(v) {
				if f == "hypervisor" {
					c.Virtual = true
				}
			}
		}
	}
	if m := thpBracket.FindStringSubmatch(readTrim(conditionPaths.thp)); m != nil {
		c.THP = m[1]
	}
	c.NUMABalancing = readTrim(conditionPaths.balancing)
	c.SMT = readTrim(conditionPaths.smt)
	c.SysVendor = readTrim(conditionPaths.dmi + "/sys_vendor")
	c.Product = readTrim(conditionPaths.dmi + "/product_name")
	c.Hypervisor = readTrim(conditionPaths.hypervisor)
	for _, v := range []string{"QEMU", "KVM", "VMware", "Xen", "Microsoft Corporation", "innotek", "Amazon EC2", "Google", "OpenStack", "Parallels", "BHYVE"} {
		if strings.Contains(c.SysVendor, v) || strings.Contains(c.Product, v) {
			c.Virtual = true
			if c.Hypervisor == "" {
				c.Hypervisor = v
			}
		}
	}
	seen := map[string]bool{}
	for _, cpu := range cpus {
		g := readTrim(strings.Replace(conditionPaths.cpufreq, "%d", strconv.Itoa(cpu), 1))
		if g != "" && !seen[g] {
			seen[g] = true
			c.Governors = append(c.Governors, g)
		}
	}
	sort.Strings(c.Governors)
	return c
}
