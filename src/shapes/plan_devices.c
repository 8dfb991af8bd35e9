/* Device profiles for `edgelm plan`: the memory bandwidth and RAM practitioners quote for the
 * devices edgelm targets (docs/deployment.md). Bandwidth is the LPDDR interface's peak (transfers/s x bus
 * width), which decode cannot exceed; RAM is what the device ships with. */
#include <string.h>

#include "edgelm/shapes.h"

static const elm_device devices[] = {
    {"x2-elite", "Snapdragon X2 Elite laptop, LPDDR5X-8533 (128-bit)", 136.5, 64},
    {"x2-elite-32", "Snapdragon X2 Elite laptop, LPDDR5X-8533, 32 GB", 136.5, 32},
    {"x-elite", "Snapdragon X Elite laptop, LPDDR5X-8448 (128-bit)", 135.0, 32},
    {"8-elite", "Snapdragon 8 Elite phone, LPDDR5X (~68 GB/s in practice), 16 GB", 68.0, 16},
    {"8-gen3", "Snapdragon 8 Gen 3 phone, LPDDR5X (~68 GB/s in practice), 12 GB", 68.0, 12},
    {"8-gen3-16", "Snapdragon 8 Gen 3 phone, LPDDR5X, 16 GB", 68.0, 16},
};

const elm_device *elm_devices(int *n) {
    *n = (int)(sizeof devices / sizeof devices[0]);
    return devices;
}

const elm_device *elm_device_find(const char *name) {
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (strcmp(name, devices[i].name) == 0) return &devices[i];
    return NULL;
}
