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

static SD_VARLINK_DEFINE_ENUM_TYPE(
                Role,
                SD_VARLINK_FIELD_COMMENT("Named by the request, or matched by its modalias or path"),
                SD_VARLINK_DEFINE_ENUM_VALUE(requested),
                SD_VARLINK_FIELD_COMMENT("A hard dependency (modules.dep) of another module"),
                SD_VARLINK_DEFINE_ENUM_VALUE(dependency),
                SD_VARLINK_FIELD_COMMENT("A softdep pre: of another module, loaded before it"),
                SD_VARLINK_DEFINE_ENUM_VALUE(softdep_pre),
                SD_VARLINK_FIELD_COMMENT("A softdep post: of another module, loaded after it"),
                SD_VARLINK_DEFINE_ENUM_VALUE(softdep_post));

static SD_VARLINK_DEFINE_ENUM_TYPE(
                Source,
                SD_VARLINK_FIELD_COMMENT("A udev rule, for a device event"),
                SD_VARLINK_DEFINE_ENUM_VALUE(udev),
                SD_VARLINK_FIELD_COMMENT("The kernel's request_module(), through the kernel.modprobe "
                                         "helper"),
                SD_VARLINK_DEFINE_ENUM_VALUE(kernel),
                SD_VARLINK_FIELD_COMMENT("The boot list: modules-load.d and modules_load= on the command "
                                         "line"),
                SD_VARLINK_DEFINE_ENUM_VALUE(boot),
                SD_VARLINK_FIELD_COMMENT("An administrator or another program"),
                SD_VARLINK_DEFINE_ENUM_VALUE(admin));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Context,
                SD_VARLINK_FIELD_COMMENT("Who asks; admin when not given"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(source, Source, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("udev: the device's DEVPATH"),
                SD_VARLINK_DEFINE_FIELD(devpath, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("udev: SUBSYSTEM"),
                SD_VARLINK_DEFINE_FIELD(subsystem, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("udev: SEQNUM of the uevent"),
                SD_VARLINK_DEFINE_FIELD(seqnum, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("udev: ACTION"),
                SD_VARLINK_DEFINE_FIELD(action, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("boot: the modules-load.d file or the command line option that "
                                         "lists the module"),
                SD_VARLINK_DEFINE_FIELD(file, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                ModuleResult,
                SD_VARLINK_FIELD_COMMENT("Canonical module name"),
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("Module file, as an absolute path below the trusted root; null for "
                                         "builtin modules"),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(outcome, Outcome, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(role, Role, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Parameters handed to the kernel: modprobe.d options, the kernel "
                                         "command line, then the request's own"),
                SD_VARLINK_DEFINE_FIELD(parameters, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Why the module was not loaded, in words"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The errno the load failed with, if any"),
                SD_VARLINK_DEFINE_FIELD(errno, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The symbolic errno name, for example ENOEXEC"),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                DeniedModule,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The rule and where it is written: FILE:LINE (Deny=...), or the "
                                         "kernel command line"),
                SD_VARLINK_DEFINE_FIELD(rule, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The chain from the module to the rule, in words"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                ExplainOrigin,
                SD_VARLINK_FIELD_COMMENT("The origin check passed: the kernel would be handed this file"),
                SD_VARLINK_DEFINE_FIELD(trusted, SD_VARLINK_BOOL, 0),
                SD_VARLINK_FIELD_COMMENT("The evidence that holds: verity, read-only, manifest or "
                                         "ownership"),
                SD_VARLINK_DEFINE_FIELD(evidence, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Why the file would not be handed to the kernel"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(fstype, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("major:minor of the file system the file is on"),
                SD_VARLINK_DEFINE_FIELD(device, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(inode, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(superblockReadOnly, SD_VARLINK_BOOL, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("What the file system is stored on, for example loop0 <- "
                                         "/srv/tree.erofs"),
                SD_VARLINK_DEFINE_FIELD(backing, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(dmTarget, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(verityRootHash, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(fsverityDigest, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The SHA-256 of the file, read from the opened fd"),
                SD_VARLINK_DEFINE_FIELD(sha256, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The module signature's signer and key id, as modinfo(8) prints "
                                         "them; null when unsigned or not read (the origin check failed)"),
                SD_VARLINK_DEFINE_FIELD(signer, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(signatureKey, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                ExplainModule,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(role, Role, 0),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("modprobe.d's and the kernel command line's options for it"),
                SD_VARLINK_DEFINE_FIELD(options, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Hard dependencies, live before it starts"),
                SD_VARLINK_DEFINE_FIELD(requires, SD_VARLINK_STRING, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("Softdeps loaded before it"),
                SD_VARLINK_DEFINE_FIELD(after, SD_VARLINK_STRING, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("In the kernel now: live, coming, going, builtin or absent"),
                SD_VARLINK_DEFINE_FIELD(state, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The policy's verdict on it: allow or deny (itself or through a "
                                         "dependency)"),
                SD_VARLINK_DEFINE_FIELD(policy, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The rule that allowed or denied it; null for an allow by default"),
                SD_VARLINK_DEFINE_FIELD(rule, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The checks on its file, as a load would make them now; null when "
                                         "the file would not be opened (builtin, live, or denied by the "
                                         "policy)"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(origin, ExplainOrigin, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                Explain,
                SD_VARLINK_FIELD_COMMENT("As for Load; nothing is loaded, and nothing is recorded"),
                SD_VARLINK_DEFINE_INPUT(name, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT(modalias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT(parameters, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT_BY_TYPE(context, Context, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT(timeoutUSec, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("What a Load would do: load, already_loaded, denied, would_deny "
                                         "(permissive mode: loads and records), untrusted, not_found, "
                                         "sealed (the kernel takes no module until reboot)"),
                SD_VARLINK_DEFINE_OUTPUT(verdict, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The rule that decided, when the policy did"),
                SD_VARLINK_DEFINE_OUTPUT(rule, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_OUTPUT(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_OUTPUT(mode, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_OUTPUT(policyDigest, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The source the policy judged the request for"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(source, Source, 0),
                SD_VARLINK_FIELD_COMMENT("The key asked for, before resolution; null for a path"),
                SD_VARLINK_DEFINE_OUTPUT(key, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The verdict on the key itself (DenyRequest=): allow or deny"),
                SD_VARLINK_DEFINE_OUTPUT(keyPolicy, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Every module the request resolves to, in load order"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(modules, ExplainModule, SD_VARLINK_ARRAY),
                SD_VARLINK_DEFINE_OUTPUT(blacklisted, SD_VARLINK_STRING,
                                         SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Joined,
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(source, Source, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(requestName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(modalias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(requestPath, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(devpath, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerPid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerUid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerUnit, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerCommand, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Record,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The latest decision: loaded, denied, would_deny, failed, "
                                         "unloaded; or loaded_outside and unloaded_outside, for what "
                                         "another loader did"),
                SD_VARLINK_DEFINE_FIELD(outcome, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("When, in µs since the epoch (CLOCK_REALTIME)"),
                SD_VARLINK_DEFINE_FIELD(time, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(role, Role, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(source, Source, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(requestName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(modalias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(devpath, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The verified caller: pid, uid and systemd unit"),
                SD_VARLINK_DEFINE_FIELD(peerPid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerUid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerUnit, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The caller's command name (/proc/PID/comm): a hint, which the "
                                         "caller sets"),
                SD_VARLINK_DEFINE_FIELD(peerCommand, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("How many requests asked for this load, the first (above) among "
                                         "them"),
                SD_VARLINK_DEFINE_FIELD(requesters, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The requests that joined the load while it was in flight, the "
                                         "first 8"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(joined, Joined, SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The modalias's vendor and model, as udev's hardware database "
                                         "names them"),
                SD_VARLINK_DEFINE_FIELD(deviceVendor, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(deviceModel, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The file's alias pattern that the request's key matched"),
                SD_VARLINK_DEFINE_FIELD(alias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The modules of the request that needed this one"),
                SD_VARLINK_DEFINE_FIELD(requiredBy, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(device, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(inode, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(evidence, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(sha256, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The module signature's signer, \"none\" for an unsigned module"),
                SD_VARLINK_DEFINE_FIELD(signer, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(signatureKey, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("A load whose file's .modinfo (alias, signer, signatureKey) is "
                                         "read after it, where the evidence binds the file's name to its "
                                         "bytes, and was not read yet: those fields come a moment later"),
                SD_VARLINK_DEFINE_FIELD(modinfoPending, SD_VARLINK_BOOL, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("What that read after the load found wrong: the file is another "
                                         "module, names none, or cannot be read"),
                SD_VARLINK_DEFINE_FIELD(afterLoad, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(parameters, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Where the modprobe.d and kernel command line options among them "
                                         "are written: FILE:LINE, the kernel command line"),
                SD_VARLINK_DEFINE_FIELD(optionsSource, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("What a failure's errno says: signature, refused, format, symbol, "
                                         "busy, resource, init"),
                SD_VARLINK_DEFINE_FIELD(errnoClass, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The policy rule of a denial"),
                SD_VARLINK_DEFINE_FIELD(rule, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The taint flags a module loaded outside modgate brought (E: "
                                         "unsigned)"),
                SD_VARLINK_DEFINE_FIELD(taint, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                List,
                SD_VARLINK_FIELD_COMMENT("Every module of this boot that modgate loaded or refused, or "
                                         "found loaded by another loader, with its latest record, by name"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(modules, Record, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_METHOD(
                Describe,
                SD_VARLINK_DEFINE_INPUT(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(module, Record, 0));

static SD_VARLINK_DEFINE_ERROR(
                NoRecord,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_METHOD(
                Reload,
                SD_VARLINK_FIELD_COMMENT("The digest of the policy now in force (SHA-256 of its rules)"),
                SD_VARLINK_DEFINE_OUTPUT(policyDigest, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_OUTPUT(mode, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                TrustedRootStatus,
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The evidence this root accepts, any one of which suffices: "
                                         "verity, read-only, manifest, ownership"),
                SD_VARLINK_DEFINE_FIELD(evidence, SD_VARLINK_STRING, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("pinned, not_there_yet (pinned at its first use), or changed (not "
                                         "what it was at its first pin this boot: nothing beneath it "
                                         "loads)"),
                SD_VARLINK_DEFINE_FIELD(state, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("What it is now: dev=MAJ:MIN diskseq=N fstype=T roothash=HEX"),
                SD_VARLINK_DEFINE_FIELD(identity, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The dm-verity root hash of the device below it, when there is "
                                         "one"),
                SD_VARLINK_DEFINE_FIELD(verityRootHash, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The manifest it checks files against, and how many files that "
                                         "lists"),
                SD_VARLINK_DEFINE_FIELD(manifest, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(manifestEntries, SD_VARLINK_INT, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Counters,
                SD_VARLINK_FIELD_COMMENT("Load calls received since this instance started"),
                SD_VARLINK_DEFINE_FIELD(requests, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Modules handed to finit_module() that are now live"),
                SD_VARLINK_DEFINE_FIELD(loads, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Requests that joined a load already in flight instead of starting "
                                         "one"),
                SD_VARLINK_DEFINE_FIELD(coalesced, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Modules answered without a job: already loaded, builtin, or a "
                                         "remembered refusal"),
                SD_VARLINK_DEFINE_FIELD(cached, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Modules refused: by the policy or on their origin"),
                SD_VARLINK_DEFINE_FIELD(denied, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD(failed, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Requests matching no module"),
                SD_VARLINK_DEFINE_FIELD(notFound, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Callers refused"),
                SD_VARLINK_DEFINE_FIELD(refusedCallers, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Modules loaded by another loader, seen since this instance "
                                         "started"),
                SD_VARLINK_DEFINE_FIELD(outsideLoads, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Module files whose name was checked against their path, which "
                                         "manifest or dm-verity evidence binds to their bytes: their "
                                         ".modinfo is read after the load, for the record"),
                SD_VARLINK_DEFINE_FIELD(namesFromPath, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Module files whose .modinfo name was read and checked before the "
                                         "load"),
                SD_VARLINK_DEFINE_FIELD(namesFromModinfo, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Module files whose .modinfo name and signature the root's manifest "
                                         "lists for their bytes (a version 2 manifest): checked before the load, "
                                         "without decompressing the file"),
                SD_VARLINK_DEFINE_FIELD(namesFromManifest, SD_VARLINK_INT, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Latency,
                SD_VARLINK_FIELD_COMMENT("How many Load calls the percentiles are over (the latest ones)"),
                SD_VARLINK_DEFINE_FIELD(samples, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("From the call's arrival to its reply, in µs"),
                SD_VARLINK_DEFINE_FIELD(p50USec, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD(p90USec, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD(p99USec, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD(maxUSec, SD_VARLINK_INT, 0));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Loading,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("How long it has been on a worker, in µs"),
                SD_VARLINK_DEFINE_FIELD(forUSec, SD_VARLINK_INT, 0));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                GuardStatus,
                SD_VARLINK_FIELD_COMMENT("In force: off, permissive (records what it would refuse) or enforce (the "
                                         "kernel refuses every module load but modgated's); off when not attached"),
                SD_VARLINK_DEFINE_FIELD(mode, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("As configured: [Guard] Mode=, or modgate.guard= of the kernel command line"),
                SD_VARLINK_DEFINE_FIELD(configured, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("Where configured comes from: config or cmdline"),
                SD_VARLINK_DEFINE_FIELD(configuredBy, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("Whether the kernel runs the BPF LSM (bpf in /sys/kernel/security/lsm)"),
                SD_VARLINK_DEFINE_FIELD(bpfLsm, SD_VARLINK_BOOL, 0),
                SD_VARLINK_DEFINE_FIELD(attached, SD_VARLINK_BOOL, 0),
                SD_VARLINK_FIELD_COMMENT("When it was attached, by this instance or an earlier one, in µs since the "
                                         "epoch"),
                SD_VARLINK_DEFINE_FIELD(attachedAt, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Kept in PID 1's fd store: it stays attached while modgated does not run"),
                SD_VARLINK_DEFINE_FIELD(kept, SD_VARLINK_BOOL, 0),
                SD_VARLINK_FIELD_COMMENT("Loads by other processes it refused (or would have) that this instance "
                                         "recorded"),
                SD_VARLINK_DEFINE_FIELD(refusals, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Why it is not attached, though configured to be"),
                SD_VARLINK_DEFINE_FIELD(unavailable, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                Status,
                SD_VARLINK_DEFINE_OUTPUT(version, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("enforce or permissive"),
                SD_VARLINK_DEFINE_OUTPUT(mode, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("SHA-256 of the policy in force, as Reload and the start record "
                                         "give it"),
                SD_VARLINK_DEFINE_OUTPUT(policyDigest, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("What the kernel enforces, in words: signatures, lockdown, "
                                         "LoadPin, IPE, IMA, modules_disabled; what cannot be read says "
                                         "unknown"),
                SD_VARLINK_DEFINE_OUTPUT(enforcement, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("kernel.modules_disabled is 1: no module can be loaded until "
                                         "reboot"),
                SD_VARLINK_DEFINE_OUTPUT(sealed, SD_VARLINK_BOOL, 0),
                SD_VARLINK_FIELD_COMMENT("The guard, the kernel's own check that only modgated loads modules"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(guard, GuardStatus, 0),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(roots, TrustedRootStatus, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("Since this instance started, in µs (it exits when idle and is "
                                         "started again by its socket)"),
                SD_VARLINK_DEFINE_OUTPUT(uptimeUSec, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(counters, Counters, 0),
                SD_VARLINK_FIELD_COMMENT("Worker threads, how many are inside finit_module() now, and jobs "
                                         "waiting for a worker or for their dependencies"),
                SD_VARLINK_DEFINE_OUTPUT(workers, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_OUTPUT(busyWorkers, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_OUTPUT(queuedJobs, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Of the queued jobs, those whose file was checked while they wait "
                                         "for their dependencies (their load checks it again)"),
                SD_VARLINK_DEFINE_OUTPUT(checkedAheadJobs, SD_VARLINK_INT, 0),
                SD_VARLINK_FIELD_COMMENT("Loads done whose journal record waits for their file's .modinfo, "
                                         "read by a worker that no load wants"),
                SD_VARLINK_DEFINE_OUTPUT(unrecordedLoads, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The modules on a worker now (opened, checked, or inside "
                                         "finit_module()), with how long each has been there: a module "
                                         "whose init hangs stays here"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(loading, Loading, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("Load calls waiting for their reply"),
                SD_VARLINK_DEFINE_OUTPUT(pendingRequests, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_OUTPUT(connections, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(latency, Latency, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                Seal,
                SD_VARLINK_FIELD_COMMENT("Load these first, as the boot list would, then seal"),
                SD_VARLINK_DEFINE_INPUT(load, SD_VARLINK_STRING, SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("What the final list loaded"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(modules, ModuleResult,
                                                 SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Modules whose loads were still in flight when the kernel was "
                                         "sealed; each either finished before the sysctl was written or "
                                         "failed"),
                SD_VARLINK_DEFINE_OUTPUT(pending, SD_VARLINK_STRING, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                Sealed,
                SD_VARLINK_FIELD_COMMENT("When it was sealed, in µs since the epoch; modules cannot be "
                                         "loaded or unloaded until reboot"),
                SD_VARLINK_DEFINE_FIELD(sealedAt, SD_VARLINK_INT, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_ENUM_TYPE(
                EventType,
                SD_VARLINK_FIELD_COMMENT("Sent once, first: every event from here on is delivered"),
                SD_VARLINK_DEFINE_ENUM_VALUE(ready),
                SD_VARLINK_FIELD_COMMENT("A Load call was received (request, source, peer)"),
                SD_VARLINK_DEFINE_ENUM_VALUE(request),
                SD_VARLINK_FIELD_COMMENT("A module's file is being opened, checked and handed to the "
                                         "kernel"),
                SD_VARLINK_DEFINE_ENUM_VALUE(started),
                SD_VARLINK_FIELD_COMMENT("The module is live (/sys/module/NAME/initstate)"),
                SD_VARLINK_DEFINE_ENUM_VALUE(loaded),
                SD_VARLINK_DEFINE_ENUM_VALUE(failed),
                SD_VARLINK_FIELD_COMMENT("Refused by the policy, on its origin, or because of its install "
                                         "command"),
                SD_VARLINK_DEFINE_ENUM_VALUE(denied),
                SD_VARLINK_DEFINE_ENUM_VALUE(would_deny),
                SD_VARLINK_DEFINE_ENUM_VALUE(unloaded),
                SD_VARLINK_FIELD_COMMENT("A module loaded by another loader"),
                SD_VARLINK_DEFINE_ENUM_VALUE(loaded_outside),
                SD_VARLINK_DEFINE_ENUM_VALUE(unloaded_outside),
                SD_VARLINK_FIELD_COMMENT("A caller refused: PermissionDenied"),
                SD_VARLINK_DEFINE_ENUM_VALUE(refused_caller),
                SD_VARLINK_FIELD_COMMENT("The policy was reloaded"),
                SD_VARLINK_DEFINE_ENUM_VALUE(reloaded),
                SD_VARLINK_FIELD_COMMENT("kernel.modules_disabled was set"),
                SD_VARLINK_DEFINE_ENUM_VALUE(sealed));

static SD_VARLINK_DEFINE_STRUCT_TYPE(
                Event,
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(type, EventType, 0),
                SD_VARLINK_FIELD_COMMENT("When, in µs since the epoch (CLOCK_REALTIME)"),
                SD_VARLINK_DEFINE_FIELD(time, SD_VARLINK_INT, 0),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("started: why the module is part of its request, and its file"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(role, Role, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("request: the method, and what was asked, as sent (a name, "
                                         "modalias or path)"),
                SD_VARLINK_DEFINE_FIELD(method, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(request, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(source, Source, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(devpath, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerPid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(peerUid, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("A decision (loaded, failed, denied, would_deny, unloaded, "
                                         "loaded_outside, unloaded_outside): its record, as Describe gives "
                                         "it"),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(record, Record, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("refused_caller: why"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("reloaded: the digest of the policy now in force"),
                SD_VARLINK_DEFINE_FIELD(policyDigest, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD_FULL(
                Monitor,
                SD_VARLINK_REQUIRES_MORE,
                SD_VARLINK_FIELD_COMMENT("Only events about these modules (a request: when it names one of "
                                         "them by name); all when not given"),
                SD_VARLINK_DEFINE_INPUT(modules, SD_VARLINK_STRING, SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(event, Event, 0));

static SD_VARLINK_DEFINE_METHOD(
                Load,
                SD_VARLINK_FIELD_COMMENT("Module name or alias: letters, digits, '_' and '-', at most 55 "
                                         "characters. Exactly one of name, modalias and path is given."),
                SD_VARLINK_DEFINE_INPUT(name, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("A device's MODALIAS as udev gives it, matched as one literal key"),
                SD_VARLINK_DEFINE_INPUT(modalias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("An absolute path to a module file beneath a trusted root"),
                SD_VARLINK_DEFINE_INPUT(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Module parameters for the requested module, as modprobe takes "
                                         "them ('a=1 b=x'); appended after modprobe.d's options"),
                SD_VARLINK_DEFINE_INPUT(parameters, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_INPUT_BY_TYPE(context, Context, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Reply with io.modgate.Manager.Timeout after this long; the load "
                                         "goes on and is still recorded"),
                SD_VARLINK_DEFINE_INPUT(timeoutUSec, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Every module touched, in load order"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY),
                SD_VARLINK_FIELD_COMMENT("Modules the modalias matched that modprobe.d blacklists; not "
                                         "loaded"),
                SD_VARLINK_DEFINE_OUTPUT(blacklisted, SD_VARLINK_STRING,
                                         SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Softdeps the policy denies, left out"),
                SD_VARLINK_DEFINE_OUTPUT_BY_TYPE(denied, DeniedModule,
                                                 SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_METHOD(
                Unload,
                SD_VARLINK_DEFINE_INPUT(name, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_OUTPUT(name, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                PermissionDenied,
                SD_VARLINK_FIELD_COMMENT("Why this caller may not ask this: the capability it lacks, the "
                                         "source it claimed and is not, the device it named and that is not "
                                         "so"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                PolicyDenied,
                SD_VARLINK_FIELD_COMMENT("The requested module that is denied, itself or through a "
                                         "dependency"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("The request key, when DenyRequest= denied the key itself"),
                SD_VARLINK_DEFINE_FIELD(request, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(rule, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("For example: vxlan needs udp_tunnel, denied by FILE:3 "
                                         "(Deny=udp_tunnel)"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                ParameterDenied,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The parameter that was refused, key=value"),
                SD_VARLINK_DEFINE_FIELD(parameter, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The [Parameters] section or RequestParameters= that refused it; "
                                         "null when it would override an option the administrator set"),
                SD_VARLINK_DEFINE_FIELD(rule, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                ConfigurationInvalid,
                SD_VARLINK_FIELD_COMMENT("The first error, with its file and line; the running policy "
                                         "stays"),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                InvalidName,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                InvalidModalias,
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                InvalidPath,
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                InvalidModuleParameters,
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                InvalidRequest,
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                ModuleNotFound,
                SD_VARLINK_DEFINE_FIELD(name, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(modalias, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_FIELD_COMMENT("Matches that modprobe.d blacklists, when there were only those"),
                SD_VARLINK_DEFINE_FIELD(blacklisted, SD_VARLINK_STRING,
                                        SD_VARLINK_ARRAY | SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_ERROR(
                UntrustedOrigin,
                SD_VARLINK_FIELD_COMMENT("The module whose file failed the origin check"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(path, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                InstallCommandRefused,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The modprobe.d install or remove command that modgate will not "
                                         "run"),
                SD_VARLINK_DEFINE_FIELD(command, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                LoadFailed,
                SD_VARLINK_FIELD_COMMENT("The first module that could not be loaded"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(errno, SD_VARLINK_INT, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE),
                SD_VARLINK_DEFINE_FIELD_BY_TYPE(modules, ModuleResult, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                Timeout,
                SD_VARLINK_FIELD_COMMENT("Modules still loading when the requester's timeout passed"),
                SD_VARLINK_DEFINE_FIELD(pending, SD_VARLINK_STRING, SD_VARLINK_ARRAY));

static SD_VARLINK_DEFINE_ERROR(
                ModuleInUse,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(holders, SD_VARLINK_STRING, SD_VARLINK_ARRAY),
                SD_VARLINK_DEFINE_FIELD(refcount, SD_VARLINK_INT, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_ERROR(
                Busy,
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_FIELD_COMMENT("The module whose load in flight conflicts with this request"),
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

static SD_VARLINK_DEFINE_ERROR(
                NotLoaded,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0));

static SD_VARLINK_DEFINE_ERROR(
                UnloadFailed,
                SD_VARLINK_DEFINE_FIELD(module, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(reason, SD_VARLINK_STRING, 0),
                SD_VARLINK_DEFINE_FIELD(errnoName, SD_VARLINK_STRING, SD_VARLINK_NULLABLE));

SD_VARLINK_DEFINE_INTERFACE(
                io_modgate_Manager,
                "io.modgate.Manager",
                SD_VARLINK_INTERFACE_COMMENT("modgate: the one place where this system loads kernel "
                                             "modules"),
                SD_VARLINK_SYMBOL_COMMENT("What happened to one module"),
                &vl_type_Outcome,
                SD_VARLINK_SYMBOL_COMMENT("Why a module was part of a request"),
                &vl_type_Role,
                SD_VARLINK_SYMBOL_COMMENT("Where a request comes from"),
                &vl_type_Source,
                SD_VARLINK_SYMBOL_COMMENT("Who asks, recorded with every decision"),
                &vl_type_Context,
                SD_VARLINK_SYMBOL_COMMENT("One module touched by a request"),
                &vl_type_ModuleResult,
                SD_VARLINK_SYMBOL_COMMENT("A softdep the policy left out of a load"),
                &vl_type_DeniedModule,
                SD_VARLINK_SYMBOL_COMMENT("The checks on a module's file, as Explain sees them"),
                &vl_type_ExplainOrigin,
                SD_VARLINK_SYMBOL_COMMENT("One module of an explained request"),
                &vl_type_ExplainModule,
                SD_VARLINK_SYMBOL_COMMENT("A module's latest decision this boot, as List and Describe give "
                                          "it"),
                &vl_type_Joined,
                &vl_type_Record,
                SD_VARLINK_SYMBOL_COMMENT("Load a module with its dependencies and softdeps. Each file is "
                                          "opened beneath a trusted root, checked on the open descriptor "
                                          "and handed to finit_module(2). Requests for a module already "
                                          "loading join that load."),
                &vl_method_Load,
                SD_VARLINK_SYMBOL_COMMENT("Unload a module that nothing uses: delete_module(2), never "
                                          "forced"),
                &vl_method_Unload,
                SD_VARLINK_SYMBOL_COMMENT("What a Load of the same request would do, step by step: "
                                          "resolution, the policy on the key and on each module, each "
                                          "module's state and the origin checks on its file. Nothing is "
                                          "loaded. For root and ReadGroup="),
                &vl_method_Explain,
                SD_VARLINK_SYMBOL_COMMENT("Read modgate.conf again and put its policy in force, as SIGHUP "
                                          "does. An invalid configuration changes nothing. Needs "
                                          "CAP_SYS_MODULE"),
                &vl_method_Reload,
                SD_VARLINK_SYMBOL_COMMENT("Every module of this boot: loaded or refused by modgate, or "
                                          "loaded outside it (found at start, or when asked for). For root "
                                          "and ReadGroup="),
                &vl_method_List,
                SD_VARLINK_SYMBOL_COMMENT("One module's latest record. For root and ReadGroup="),
                &vl_method_Describe,
                SD_VARLINK_SYMBOL_COMMENT("A trusted root as Status shows it"),
                &vl_type_TrustedRootStatus,
                SD_VARLINK_SYMBOL_COMMENT("The guard as Status shows it"),
                &vl_type_GuardStatus,
                SD_VARLINK_SYMBOL_COMMENT("What this instance has done since it started"),
                &vl_type_Counters,
                SD_VARLINK_SYMBOL_COMMENT("Load calls' latency, from arrival to reply"),
                &vl_type_Latency,
                SD_VARLINK_SYMBOL_COMMENT("A module on a worker now"),
                &vl_type_Loading,
                SD_VARLINK_SYMBOL_COMMENT("The daemon's state: mode, policy, the kernel's enforcement, the "
                                          "trusted roots, counters, workers and latency. For root and "
                                          "ReadGroup="),
                &vl_method_Status,
                SD_VARLINK_SYMBOL_COMMENT("Set kernel.modules_disabled=1, after loading a final list when "
                                          "one is given. From then on no module can be loaded or unloaded "
                                          "until reboot, by modgate or anyone else; every later request is "
                                          "refused with Sealed and recorded. Needs CAP_SYS_MODULE"),
                &vl_method_Seal,
                SD_VARLINK_SYMBOL_COMMENT("The kernel is sealed (kernel.modules_disabled=1)"),
                &vl_error_Sealed,
                SD_VARLINK_SYMBOL_COMMENT("What a Monitor event is about"),
                &vl_type_EventType,
                SD_VARLINK_SYMBOL_COMMENT("One thing that happened, as Monitor streams it"),
                &vl_type_Event,
                SD_VARLINK_SYMBOL_COMMENT("Stream events as they happen: requests, modules started, loaded, "
                                          "failed, denied, unloaded, and loads by other loaders. Call with "
                                          "more; the first reply is a ready event. For root and ReadGroup="),
                &vl_method_Monitor,
                SD_VARLINK_SYMBOL_COMMENT("Describe: this boot has no record of the module"),
                &vl_error_NoRecord,
                SD_VARLINK_SYMBOL_COMMENT("The module policy denies the request: a Deny=, an allowlist "
                                          "without an Allow= for it, a DenyRequest= on the key, or the "
                                          "kernel command line's module_blacklist="),
                &vl_error_PolicyDenied,
                SD_VARLINK_SYMBOL_COMMENT("A request parameter the module's [Parameters] rule does not "
                                          "allow, one that would override the administrator's options, or "
                                          "parameters for a request that matches more than one module"),
                &vl_error_ParameterDenied,
                SD_VARLINK_SYMBOL_COMMENT("Reload found an error in the configuration"),
                &vl_error_ConfigurationInvalid,
                SD_VARLINK_SYMBOL_COMMENT("The name has characters, a length or a form that no module has"),
                &vl_error_InvalidName,
                SD_VARLINK_SYMBOL_COMMENT("The modalias is empty, too long, or has control or space "
                                          "characters"),
                &vl_error_InvalidModalias,
                SD_VARLINK_SYMBOL_COMMENT("The path is not absolute, not normalized, or not a module file "
                                          "name"),
                &vl_error_InvalidPath,
                SD_VARLINK_SYMBOL_COMMENT("The module parameters are too long or have control characters"),
                &vl_error_InvalidModuleParameters,
                SD_VARLINK_SYMBOL_COMMENT("Not exactly one of name, modalias and path, or context strings "
                                          "that are too long or have control characters"),
                &vl_error_InvalidRequest,
                SD_VARLINK_SYMBOL_COMMENT("No module or builtin matches the name or modalias"),
                &vl_error_ModuleNotFound,
                SD_VARLINK_SYMBOL_COMMENT("A file failed the origin check; nothing that needs it was "
                                          "loaded"),
                &vl_error_UntrustedOrigin,
                SD_VARLINK_SYMBOL_COMMENT("modprobe.d has an install or remove command for a module; "
                                          "modgate never runs commands"),
                &vl_error_InstallCommandRefused,
                SD_VARLINK_SYMBOL_COMMENT("The kernel refused a module, or it could not be handed over"),
                &vl_error_LoadFailed,
                SD_VARLINK_SYMBOL_COMMENT("The requester's timeout passed; the load goes on in the daemon"),
                &vl_error_Timeout,
                SD_VARLINK_SYMBOL_COMMENT("The module is used by other modules or has references"),
                &vl_error_ModuleInUse,
                SD_VARLINK_SYMBOL_COMMENT("Too many requests are pending, or a load of the same module from "
                                          "another file or with other parameters is in flight; try again"),
                &vl_error_Busy,
                SD_VARLINK_SYMBOL_COMMENT("The caller may not make this request: Load and Unload need "
                                          "CAP_SYS_MODULE in the initial user namespace, a claimed source "
                                          "must be the caller's own, and udevd without the capability may "
                                          "ask only for what its device announces"),
                &vl_error_PermissionDenied,
                SD_VARLINK_SYMBOL_COMMENT("The module is not loaded"),
                &vl_error_NotLoaded,
                SD_VARLINK_SYMBOL_COMMENT("delete_module(2) failed"),
                &vl_error_UnloadFailed);
