/* `edgelm inspect --system` (system_info.h): CPU model (Linux /proc/cpuinfo), online cores, the
 * SIMD features the kernels look at, the kernel tables this CPU can run and the one chosen
 * (EDGELM_ISA overrides it). */
#include "system_info.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/system.h"

/* The CPU's name from /proc/cpuinfo: "model name" on x86 and on newer ARM kernels, "Hardware" on
 * older ARM ones; "unknown" elsewhere. */
static void cpu_model(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon || (strncmp(line, "model name", 10) && strncmp(line, "Hardware", 8))) continue;
        colon += strspn(colon + 1, " \t") + 1;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, cap, "%s", colon);
        break;
    }
    fclose(f);
}

int cli_print_system(bool json) {
    char model[256], features[512], available[128];
    cpu_model(model, sizeof model);
    elm_cpu_features(features, sizeof features);
    elm_kernel_isas(available, sizeof available);
    const char *forced = getenv("EDGELM_ISA");
    const char *chosen = elm_kernel_isa();
    if (!json) {
        printf("cpu           %s\n", model);
        printf("cores         %d online\n", elm_online_cores());
        printf("features      %s\n", features[0] ? features : "-");
        printf("built         %s\n", elm_kernels_built());
        printf("kernels       %s (available: %s)%s%s\n", chosen, available,
               forced && *forced ? ", EDGELM_ISA=" : "", forced && *forced ? forced : "");
        return 0;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cpu", model);
    cJSON_AddNumberToObject(o, "cores", elm_online_cores());
    cJSON *f = cJSON_AddArrayToObject(o, "features");
    for (char *tok = strtok(features, " "); tok; tok = strtok(NULL, " "))
        cJSON_AddItemToArray(f, cJSON_CreateString(tok));
    cJSON *av = cJSON_AddArrayToObject(o, "available");
    for (char *tok = strtok(available, " "); tok; tok = strtok(NULL, " "))
        cJSON_AddItemToArray(av, cJSON_CreateString(tok));
    cJSON_AddStringToObject(o, "built", elm_kernels_built());
    cJSON_AddStringToObject(o, "isa", chosen);
    if (forced && *forced) cJSON_AddStringToObject(o, "forced", forced);
    else cJSON_AddNullToObject(o, "forced");
    return cli_print_json(o, "inspect");
}
