/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The errors of io.modgate.Manager and io.modgate.Probe (varlink-io.modgate.*.c define them, with
 * their parameters), named once for the daemon, the prober and every client. Plain strings: the
 * clients that link libc alone use them too. */

#define MANAGER_ERROR_BUSY                      "io.modgate.Manager.Busy"
#define MANAGER_ERROR_CONFIGURATION_INVALID     "io.modgate.Manager.ConfigurationInvalid"
#define MANAGER_ERROR_INSTALL_COMMAND_REFUSED   "io.modgate.Manager.InstallCommandRefused"
#define MANAGER_ERROR_INVALID_MODALIAS          "io.modgate.Manager.InvalidModalias"
#define MANAGER_ERROR_INVALID_MODULE_PARAMETERS "io.modgate.Manager.InvalidModuleParameters"
#define MANAGER_ERROR_INVALID_NAME              "io.modgate.Manager.InvalidName"
#define MANAGER_ERROR_INVALID_PATH              "io.modgate.Manager.InvalidPath"
#define MANAGER_ERROR_INVALID_REQUEST           "io.modgate.Manager.InvalidRequest"
#define MANAGER_ERROR_LOAD_FAILED               "io.modgate.Manager.LoadFailed"
#define MANAGER_ERROR_MODULE_IN_USE             "io.modgate.Manager.ModuleInUse"
#define MANAGER_ERROR_MODULE_NOT_FOUND          "io.modgate.Manager.ModuleNotFound"
#define MANAGER_ERROR_NO_RECORD                 "io.modgate.Manager.NoRecord"
#define MANAGER_ERROR_NOT_LOADED                "io.modgate.Manager.NotLoaded"
#define MANAGER_ERROR_PARAMETER_DENIED          "io.modgate.Manager.ParameterDenied"
#define MANAGER_ERROR_PERMISSION_DENIED         "io.modgate.Manager.PermissionDenied"
#define MANAGER_ERROR_POLICY_DENIED             "io.modgate.Manager.PolicyDenied"
#define MANAGER_ERROR_SEALED                    "io.modgate.Manager.Sealed"
#define MANAGER_ERROR_TIMEOUT                   "io.modgate.Manager.Timeout"
#define MANAGER_ERROR_UNLOAD_FAILED             "io.modgate.Manager.UnloadFailed"
#define MANAGER_ERROR_UNTRUSTED_ORIGIN          "io.modgate.Manager.UntrustedOrigin"

#define PROBE_ERROR_DEVICE_CHANGED              "io.modgate.Probe.DeviceChanged"
#define PROBE_ERROR_FAILED                      "io.modgate.Probe.Failed"
#define PROBE_ERROR_NO_SUCH_DEVICE              "io.modgate.Probe.NoSuchDevice"
#define PROBE_ERROR_NOT_DEVICE_MAPPER           "io.modgate.Probe.NotDeviceMapper"
#define PROBE_ERROR_NOT_LOOP                    "io.modgate.Probe.NotLoop"
