/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "macro.h"
#include "tests.h"
#include "varlink-errors.h"
#include "varlink-io.modgate.Manager.h"
#include "varlink-io.modgate.Probe.h"

/* Whether name ("io.modgate.Manager.Busy") is an error that interface defines. */
static bool defines_error(const sd_varlink_interface *interface, const char *name) {
        size_t n = strlen(interface->name);

        if (strncmp(name, interface->name, n) != 0 || name[n] != '.')
                return false;
        for (const sd_varlink_symbol *const *s = interface->symbols; *s; s++)
                if ((*s)->symbol_type == SD_VARLINK_ERROR && strcmp((*s)->name, name + n + 1) == 0)
                        return true;
        return false;
}

static size_t count_errors(const sd_varlink_interface *interface) {
        size_t n = 0;

        for (const sd_varlink_symbol *const *s = interface->symbols; *s; s++)
                n += (*s)->symbol_type == SD_VARLINK_ERROR;
        return n;
}

TEST(manager) {
        static const char *const names[] = {
                MANAGER_ERROR_BUSY, MANAGER_ERROR_CONFIGURATION_INVALID, MANAGER_ERROR_INSTALL_COMMAND_REFUSED,
                MANAGER_ERROR_INVALID_MODALIAS, MANAGER_ERROR_INVALID_MODULE_PARAMETERS,
                MANAGER_ERROR_INVALID_NAME, MANAGER_ERROR_INVALID_PATH, MANAGER_ERROR_INVALID_REQUEST,
                MANAGER_ERROR_LOAD_FAILED, MANAGER_ERROR_MODULE_IN_USE, MANAGER_ERROR_MODULE_NOT_FOUND,
                MANAGER_ERROR_NO_RECORD, MANAGER_ERROR_NOT_LOADED, MANAGER_ERROR_PARAMETER_DENIED,
                MANAGER_ERROR_PERMISSION_DENIED, MANAGER_ERROR_POLICY_DENIED, MANAGER_ERROR_SEALED,
                MANAGER_ERROR_TIMEOUT, MANAGER_ERROR_UNLOAD_FAILED, MANAGER_ERROR_UNTRUSTED_ORIGIN,
        };

        /* Each name is one the interface defines, and it defines no other. */
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                check(defines_error(&vl_interface_io_modgate_Manager, names[i]));
        check(count_errors(&vl_interface_io_modgate_Manager) == ELEMENTSOF(names));
        check(!defines_error(&vl_interface_io_modgate_Manager, "io.modgate.Manager.Load"));
        check(!defines_error(&vl_interface_io_modgate_Manager, "io.modgate.Probe.NotLoop"));
}

TEST(probe) {
        static const char *const names[] = {
                PROBE_ERROR_DEVICE_CHANGED, PROBE_ERROR_FAILED, PROBE_ERROR_NO_SUCH_DEVICE,
                PROBE_ERROR_NOT_DEVICE_MAPPER, PROBE_ERROR_NOT_LOOP,
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                check(defines_error(&vl_interface_io_modgate_Probe, names[i]));
        check(count_errors(&vl_interface_io_modgate_Probe) == ELEMENTSOF(names));
}

int main(void) {
        RUN(manager);
        RUN(probe);
        return tests_done();
}
