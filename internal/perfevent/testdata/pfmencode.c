/* pfmencode: prints libpfm4's raw encoding of each event named on the
 * command line, one "EVENT<TAB>0xCODE" line each, or "EVENT<TAB>error: ..."
 * for an event libpfm4 does not know. With -l it lists the PMUs libpfm4
 * supports. Built and run by the cross-check test (presets_pfm_test.go);
 * LIBPFM_FORCE_PMU in the environment picks the CPU model to encode for. */
#include <stdio.h>
#include <string.h>
#include <perfmon/pfmlib.h>

int main(int argc, char **argv)
{
	int ret = pfm_initialize();
	if (ret != PFM_SUCCESS) {
		fprintf(stderr, "pfm_initialize: %s\n", pfm_strerror(ret));
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "-l") == 0) {
		pfm_pmu_info_t info;
		pfm_pmu_t p;
		pfm_for_all_pmus(p) {
			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm_get_pmu_info(p, &info) == PFM_SUCCESS && info.name)
				printf("%s\n", info.name);
		}
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		uint64_t *codes = NULL;
		int count = 0;
		ret = pfm_get_event_encoding(argv[i], PFM_PLM0 | PFM_PLM3, NULL, NULL, &codes, &count);
		if (ret != PFM_SUCCESS || count < 1)
			printf("%s\terror: %s\n", argv[i], pfm_strerror(ret));
		else
			printf("%s\t0x%llx\n", argv[i], (unsigned long long)codes[0]);
	}
	return 0;
}
