# SPDX-License-Identifier: LGPL-2.1-or-later
"""modgate's records survive fleet forwarding unchanged: the guest is both sender and receiver, with
systemd-journal-upload sending its journal to systemd-journal-remote over HTTP on 127.0.0.1 only
(plain HTTP: the traffic never leaves the loopback; docs/fleet.md says how to use TLS between hosts).
A load and a refusal are forwarded with every MODGATE_* field and the MESSAGE_ID as the local journal
has them, and so is every record modgated wrote in this boot up to then. Both units are Debian's
own, with drop-ins in /run that the cleanup removes."""

import json
import time

import guest

MODULE = "tcp_nv"               # loaded by the system's modgated; no dependencies
REFUSED = "tcp_cdg"             # copied to /var/tmp, asked for by path: refused, never loaded
OUTSIDE = "/var/tmp/modgate-fleet/tcp_cdg.ko.xz"

LOADED_ID = "9f556e7045894398898a0967ca80c0b2"
DENIED_ID = "3c67f0aec4794a73a35a7cb128a9d622"

PORT = 19532
URL = "http://127.0.0.1:%d" % PORT
REMOTE_DIR = "/var/log/journal/remote"
UPLOAD_STATE = "/var/lib/private/systemd/journal-upload /var/lib/systemd/journal-upload"    # DynamicUser=
TIMEOUT = 300
WAIT = 120                      # seconds for a record to reach the receiver (the whole boot's journal first)

# Drop-ins for the shipped units and configuration: the socket on the loopback only, the receiver
# speaking plain HTTP on it (the shipped ExecStart= wants HTTPS and a certificate), the uploader's URL.
DROPINS = {
    "/run/systemd/system/systemd-journal-remote.socket.d/50-modgate-vm.conf":
        "[Socket]\nListenStream=\nListenStream=127.0.0.1:%d\n" % PORT,
    "/run/systemd/system/systemd-journal-remote.service.d/50-modgate-vm.conf":
        "[Service]\nExecStart=\nExecStart=/usr/lib/systemd/systemd-journal-remote --listen-http=-3 "
        "--output=%s/\n" % REMOTE_DIR,
    "/run/systemd/journal-upload.conf.d/50-modgate-vm.conf":
        "[Upload]\nURL=%s\n" % URL,
}

# Fields that name the host and the boot: a receiver tells its senders apart by them.
HOST_FIELDS = ("_HOSTNAME", "_MACHINE_ID", "_BOOT_ID")


def entries(vm, *matches, directory=None):
    """Journal entries as dicts, every field in full (--all: no field shown as null for its size),
    from the local journal or, with directory, only from the journal files there."""
    args = ["journalctl", "--all", "-o", "json", "--no-pager"]
    if directory:
        args += ["-D", directory]
    else:
        vm.sh("journalctl --sync")
    out = vm.sh(" ".join(args + [guest.quote(m) for m in matches]), check=False).out
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def forwarded(vm, *matches, count=1):
    """The receiver's entries with matches, once at least count have arrived (or WAIT has passed)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = entries(vm, *matches, directory=REMOTE_DIR)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def modgate_fields(record):
    return {k: v for k, v in record.items() if k.startswith("MODGATE_")}


def compare(local, remote):
    """Asserts that remote is the forwarded copy of local: the MESSAGE_ID, every MODGATE_* field with
    its value, and the host's and boot's identity. Returns (fields of local missing in remote, fields
    only in remote, fields whose value differs), for the diagnostics."""
    fields = modgate_fields(local)
    assert fields, local
    assert remote["MESSAGE_ID"] == local["MESSAGE_ID"], (local["MESSAGE_ID"], remote.get("MESSAGE_ID"))
    missing = sorted(k for k in fields if k not in remote)
    changed = sorted(k for k in fields if k in remote and remote[k] != fields[k])
    assert not missing and not changed, "MODGATE_* fields lost: %s; changed: %s" % (
        missing, ["%s: %r -> %r" % (k, fields[k], remote[k]) for k in changed])
    for k in HOST_FIELDS:
        assert remote.get(k) == local[k], (k, local[k], remote.get(k))
    return (sorted(set(local) - set(remote)), sorted(set(remote) - set(local)),
            sorted(k for k in set(local) & set(remote) if local[k] != remote[k]))


def one_record(vm, msgid, module):
    """The single local record of this boot's modgated with msgid and module, and its forwarded copy."""
    matches = ("MESSAGE_ID=" + msgid, "MODGATE_MODULE=" + module, "_BOOT_ID=" + vm.boot_id)
    local = entries(vm, *matches, "_SYSTEMD_UNIT=modgated.service")
    assert len(local) == 1, local
    fields = modgate_fields(local[0])
    assert len(fields) >= 10 and fields["MODGATE_MODULE"] == module and "MODGATE_OUTCOME" in fields, local
    remote = forwarded(vm, *matches)
    assert len(remote) == 1, "%d forwarded copies of the %s record of %s" % (len(remote), msgid, module)
    return local[0], remote[0]


def report(what, local, remote, diff):
    dropped, added, differs = diff
    print("# %s: %d MODGATE_* fields, all forwarded unchanged; %d fields locally, %d forwarded" % (
        what, len(modgate_fields(local)), len(local), len(remote)))
    print("# not forwarded: %s; added: %s; rewritten: %s" % (
        " ".join(dropped) or "none", " ".join(added) or "none", " ".join(differs) or "none"))


def test_receiver(vm):
    """systemd-journal-remote.socket listens on 127.0.0.1:19532 and nowhere else"""
    assert vm.sh("test -e %s" % REMOTE_DIR, check=False).rc != 0, "%s exists before the test" % REMOTE_DIR
    for path, text in DROPINS.items():
        vm.sh("mkdir -p $(dirname %s) && cat >%s" % (path, path), stdin=text)
    vm.sh("systemctl daemon-reload && systemctl start systemd-journal-remote.socket")
    listen = vm.sh("systemctl show -P Listen systemd-journal-remote.socket").out.strip()
    assert listen == "127.0.0.1:%d (Stream)" % PORT, listen
    sockets = vm.sh("ss -Hltn 'sport = :%d'" % PORT).out.split("\n")
    local_addresses = [line.split()[3] for line in sockets if line.strip()]
    assert local_addresses == ["127.0.0.1:%d" % PORT], sockets


def test_upload(vm):
    """systemd-journal-upload sends the guest's journal to it, as journal files in /var/log/journal/remote"""
    vm.sh("systemctl start systemd-journal-upload.service")
    start = time.monotonic()
    # modgated's start record of this boot is among the first entries it sends.
    got = forwarded(vm, "MESSAGE_ID=0b62bd3196754f93821022336e8ce9fa", "_BOOT_ID=" + vm.boot_id)
    took = time.monotonic() - start
    state = vm.sh("systemctl show -P ActiveState systemd-journal-upload.service").out.strip()
    log = vm.sh("journalctl -b --no-pager -o cat -u systemd-journal-upload.service "
                "-u systemd-journal-remote.service", check=False).out
    assert got, "nothing forwarded after %d s (uploader %s):\n%s" % (WAIT, state, log[-2000:])
    assert state == "active", (state, log[-2000:])
    files = vm.sh("find %s -name '*.journal' -size +0" % REMOTE_DIR).out.split()
    assert files, vm.sh("ls -la %s" % REMOTE_DIR, check=False).out
    print("# modgated's start record forwarded %.1f s after the uploader started; files: %s" % (
        took, " ".join(files)))


def test_loaded_forwarded(vm):
    """a load's record is forwarded with its MESSAGE_ID and every MODGATE_* field unchanged"""
    assert guest.live_modules(vm)[MODULE] == 0, "%s is loaded already" % MODULE
    reply, error = guest.load(vm, MODULE)
    assert error is None and [m["outcome"] for m in reply["modules"]] == ["loaded"], (error, reply)
    local, remote = one_record(vm, LOADED_ID, MODULE)
    assert local["MODGATE_OUTCOME"] == "loaded" and len(local["MODGATE_SHA256"]) == 64, local
    report("loaded %s" % MODULE, local, remote, compare(local, remote))


def test_refusal_forwarded(vm):
    """a refusal's record (a path outside the trusted tree) is forwarded, every MODGATE_* field unchanged"""
    path, _ = guest.dependencies(vm, REFUSED)
    vm.sh("mkdir -p $(dirname %s) && cp /usr/lib/modules/$(uname -r)/%s %s" % (OUTSIDE, path, OUTSIDE))
    reply, error = guest.varlinkctl(vm, "io.modgate.Manager.Load", {"path": OUTSIDE})
    assert error == guest.UNTRUSTED and "not beneath a trusted root" in reply["reason"], (error, reply)
    local, remote = one_record(vm, DENIED_ID, REFUSED)
    assert local["MODGATE_OUTCOME"] == "denied" and local["MODGATE_REQUEST_PATH"] == OUTSIDE, local
    assert remote["MODGATE_REASON"] == reply["reason"], (remote["MODGATE_REASON"], reply["reason"])
    report("refused %s" % REFUSED, local, remote, compare(local, remote))
    assert guest.live_modules(vm)[REFUSED] == 0


def test_every_record_forwarded(vm):
    """every record modgated wrote in this boot so far is forwarded, each exactly once and unchanged"""
    matches = ("_BOOT_ID=" + vm.boot_id, "_SYSTEMD_UNIT=modgated.service")
    local = [e for e in entries(vm, *matches) if "MESSAGE_ID" in e and modgate_fields(e)]
    assert len(local) >= 3, local

    def key(e):
        return (e["__REALTIME_TIMESTAMP"], e["__MONOTONIC_TIMESTAMP"], e.get("MESSAGE_ID"))

    # Until the newest of them is there: the uploader sends in the journal's order.
    deadline = time.monotonic() + WAIT
    while True:
        copies = {}
        for e in entries(vm, *matches, directory=REMOTE_DIR):
            copies.setdefault(key(e), []).append(e)
        if key(local[-1]) in copies or time.monotonic() > deadline:
            break
        time.sleep(1)
    fields = 0
    for e in local:
        got = copies.get(key(e), [])
        assert len(got) == 1, "%d forwarded copies of %r" % (len(got), e.get("MESSAGE"))
        compare(e, got[0])
        fields += len(modgate_fields(e))
    print("# %d records of modgated (%d MODGATE_* fields) forwarded unchanged, %d message ids" % (
        len(local), fields, len({e["MESSAGE_ID"] for e in local})))


def cleanup(vm):
    vm.sh("""systemctl stop systemd-journal-upload.service systemd-journal-remote.service \
                systemd-journal-remote.socket
        systemctl reset-failed systemd-journal-upload.service systemd-journal-remote.service 2>/dev/null
        rm -f %(dropins)s
        systemctl daemon-reload
        rm -rf %(remote)s %(state)s /var/tmp/modgate-fleet
        rmmod %(module)s
        """ % {"dropins": " ".join(DROPINS), "remote": REMOTE_DIR, "state": UPLOAD_STATE, "module": MODULE},
          check=False)
