/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "varlink-io.modgate.Probe.h"

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Verity,
                SD_VARLINK_FIELD_COMMENT("The root hash the kernel verifies the device with, lowercase hex"),
                SD_VARLINK_DEFINE_FIELD(rootHash, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The hash algorithm, as the kernel's crypto API names it"),
                SD_VARLINK_DEFINE_FIELD(algorithm, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The data device, MAJOR:MINOR"),
                SD_VARLINK_DEFINE_FIELD(dataDevice, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The hash device, MAJOR:MINOR"),
                SD_VARLINK_DEFINE_FIELD(hashDevice, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The optional arguments of the table, space-separated"),
                SD_VARLINK_DEFINE_FIELD(options, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("ignore_corruption is set: corrupt blocks are logged, not refused"),
                SD_VARLINK_DEFINE_FIELD(ignoreCorruption, SD_VARLINK_BOOL, 0),
                SD_VARLINK_FIELD_COMMENT("The status says a corrupt block was seen"),
                SD_VARLINK_DEFINE_FIELD(corrupted, SD_VARLINK_BOOL, 0));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Target,
                SD_VARLINK_FIELD_COMMENT("The target type: verity, linear, crypt, ..."),
                SD_VARLINK_DEFINE_FIELD(type, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("First sector"),
                SD_VARLINK_DEFINE_FIELD(start, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Length in sectors"),
                SD_VARLINK_DEFINE_FIELD(length, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("For a verity target, its table; nothing of any other target's "
                                         "table is given (a crypt target's holds its key)"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(verity, Verity, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                DescribeDevice,
                SD_VARLINK_FIELD_COMMENT("The block device's major number"),
                SD_VARLINK_DEFINE_INPUT(major, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Its minor number"),
                SD_VARLINK_DEFINE_INPUT(minor, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("The instance the caller saw (/sys/dev/block/M:m/diskseq): the "
                                         "answer is about that one or none"),
                SD_VARLINK_DEFINE_INPUT(diskseq, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The device-mapper name, which userspace chose"),
                SD_VARLINK_DEFINE_OUTPUT(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The device-mapper uuid, which userspace chose"),
                SD_VARLINK_DEFINE_OUTPUT(uuid, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The instance the table was read from"),
                SD_VARLINK_DEFINE_OUTPUT(diskseq, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The live table's targets, in order"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(targets, Target, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_METHOD(
                DescribeLoop,
                SD_VARLINK_FIELD_COMMENT("The loop device's major number"),
                SD_VARLINK_DEFINE_INPUT(major, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Its minor number"),
                SD_VARLINK_DEFINE_INPUT(minor, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("The instance the caller saw (/sys/dev/block/M:m/diskseq): the "
                                         "answer is about that one or none"),
                SD_VARLINK_DEFINE_INPUT(diskseq, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The major number of the device of the file the loop device reads"),
                SD_VARLINK_DEFINE_OUTPUT(backingMajor, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Its minor number"),
                SD_VARLINK_DEFINE_OUTPUT(backingMinor, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("The inode of that file"),
                SD_VARLINK_DEFINE_OUTPUT(backingInode, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("The instance the answer is about"),
                SD_VARLINK_DEFINE_OUTPUT(diskseq, SD_VARLINK_INT, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_ERROR(NoSuchDevice);
static SD_VARLINK_DEFINE_ERROR(NotLoop);
static SD_VARLINK_DEFINE_ERROR(NotDeviceMapper);
static SD_VARLINK_DEFINE_ERROR(
                DeviceChanged,
                SD_VARLINK_DEFINE_FIELD(diskseq, SD_VARLINK_INT, SD_VARLINK_NULLABLE));
static SD_VARLINK_DEFINE_ERROR(
                Failed,
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

SD_VARLINK_DEFINE_INTERFACE(
                io_modgate_Probe,
                "io.modgate.Probe",
                SD_VARLINK_INTERFACE_COMMENT("What the kernel's device-mapper table says of a block device, "
                                             "and which file a loop device reads, for modgated, which does "
                                             "not hold CAP_SYS_ADMIN and cannot open block devices "
                                             "(PrivateDevices=yes)."),
                SD_VARLINK_SYMBOL_COMMENT("A verity target's table"),
                &vl_type_Verity,
                SD_VARLINK_SYMBOL_COMMENT("One target of the live table"),
                &vl_type_Target,
                SD_VARLINK_SYMBOL_COMMENT("The device-mapper table of a block device"),
                &vl_method_DescribeDevice,
                SD_VARLINK_SYMBOL_COMMENT("The file a loop device reads, as the kernel holds it "
                                          "(LOOP_GET_STATUS64): its device and inode, which no path names"),
                &vl_method_DescribeLoop,
                SD_VARLINK_SYMBOL_COMMENT("There is no block device of this number"),
                &vl_error_NoSuchDevice,
                SD_VARLINK_SYMBOL_COMMENT("The block device is not a device-mapper device"),
                &vl_error_NotDeviceMapper,
                SD_VARLINK_SYMBOL_COMMENT("The block device is not a loop device, or reads no file"),
                &vl_error_NotLoop,
                SD_VARLINK_SYMBOL_COMMENT("The device of this number is another instance than the one asked "
                                          "about"),
                &vl_error_DeviceChanged,
                SD_VARLINK_SYMBOL_COMMENT("The table could not be read"),
                &vl_error_Failed);
