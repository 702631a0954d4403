/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "varlink-io.modgate.Manager.h"

static SD_VARLINK_DEFINE_ENUM_TYPE(
                Outcome,
                SD_VARLINK_FIELD_COMMENT("finit_module() succeeded for this module"),
                SD_VARLINK_DEFINE_ENUM_VALUE(loaded),
                SD_VARLINK_FIELD_COMMENT("The module was live already, nothing was done"),
                SD_VARLINK_DEFINE_ENUM_VALUE(already_loaded),
                SD_VARLINK_FIELD_COMMENT("The module is built into the kernel"),
                SD_VARLINK_DEFINE_ENUM_VALUE(builtin),
                SD_VARLINK_FIELD_COMMENT("The kernel refused the module, or it was not attempted because a "
                                         "dependency failed"),
                SD_VARLINK_DEFINE_ENUM_VALUE(failed),
                SD_VARLINK_FIELD_COMMENT("modgate refused to hand the file to the kernel"),
                SD_VARLINK_DEFINE_ENUM_VALUE(denied));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                ModuleResult,
                SD_VARLINK_FIELD_COMMENT("Canonical module name"),
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("Module file, as an absolute path below the trusted root; null for "
                                         "builtin modules"),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(outcome, Outcome, 0),
                SD_VARLINK_FIELD_COMMENT("Why the module was not loaded, in words"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The errno the load failed with, if any"),
                SD_VARLINK_DEFINE_FIELD(errno, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The symbolic errno name, for example ENOEXEC"),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                Load,
                SD_VARLINK_FIELD_COMMENT("Module name: letters, digits, '_' and '-', at most 55 characters"),
                SD_VARLINK_DEFINE_INPUT(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("Every module touched, dependencies first, in load order"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                InvalidName,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                ModuleNotFound,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                UntrustedOrigin,
                SD_VARLINK_FIELD_COMMENT("The module whose file failed the origin check"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                LoadFailed,
                SD_VARLINK_FIELD_COMMENT("The first module that could not be loaded"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(errno, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

SD_VARLINK_DEFINE_INTERFACE(
                io_modgate_Manager,
                "io.modgate.Manager",
                SD_VARLINK_INTERFACE_COMMENT("modgate: the one place where this system loads kernel modules"),
                SD_VARLINK_SYMBOL_COMMENT("What happened to one module"),
                &vl_type_Outcome,
                SD_VARLINK_SYMBOL_COMMENT("One module touched by a request"),
                &vl_type_ModuleResult,
                SD_VARLINK_SYMBOL_COMMENT("Load a module and its dependencies. Each file is opened beneath a "
                                          "trusted root, checked on the open descriptor and handed to "
                                          "finit_module(2)."),
                &vl_method_Load,
                SD_VARLINK_SYMBOL_COMMENT("The name has characters, a length or a form that no module has"),
                &vl_error_InvalidName,
                SD_VARLINK_SYMBOL_COMMENT("No module or builtin of that name is known to the module index"),
                &vl_error_ModuleNotFound,
                SD_VARLINK_SYMBOL_COMMENT("A file failed the origin check; nothing after it was loaded"),
                &vl_error_UntrustedOrigin,
                SD_VARLINK_SYMBOL_COMMENT("The kernel refused a module, or it could not be handed over"),
                &vl_error_LoadFailed);
