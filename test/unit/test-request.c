/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "request.h"
#include "tests.h"

TEST(modalias) {
        static char big[MODALIAS_MAX + 2];

        check(!modalias_check("pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"));
        check(!modalias_check("cpu:type:x86,ven0000fam0006mod003F:feature:,0000,0001"));
        check(!modalias_check("pci:*"));        /* a literal key; matching never treats it as a pattern */
        check(!modalias_check("fs-erofs"));
        check(!modalias_check("crypto-hmac(sha256)"));

        check(modalias_check(NULL));
        check(modalias_check(""));
        check(modalias_check("-x"));
        check(modalias_check("pci:v1 pci:v2"));
        check(modalias_check("a\tb"));
        check(modalias_check("a\nb"));
        check(modalias_check("caf\xc3\xa9"));
        check(modalias_check("a\x7f"));

        memset(big, 'a', MODALIAS_MAX);
        check(!modalias_check(big));
        big[MODALIAS_MAX] = 'a';
        check(modalias_check(big));
}

TEST(parameters) {
        static char big[MODULE_PARAMETERS_MAX + 2];

        check(!module_parameters_check(""));
        check(!module_parameters_check("a=1 b=\"x y\" c"));
        check(module_parameters_check("a=1\nb=2"));
        check(module_parameters_check("a=\x01"));
        memset(big, 'a', MODULE_PARAMETERS_MAX);
        check(!module_parameters_check(big));
        big[MODULE_PARAMETERS_MAX] = 'a';
        check(module_parameters_check(big));
}

TEST(path) {
        check(!module_path_check("/usr/lib/modules/6.12/kernel/drivers/net/dummy.ko.xz"));
        check(!module_path_check("/x/a.ko"));
        check(!module_path_check("/x/a.ko.zst"));
        check(!module_path_check("/x/a.ko.gz"));

        check(module_path_check("x/a.ko"));
        check(module_path_check("/x/../a.ko"));
        check(module_path_check("/x/./a.ko"));
        check(module_path_check("//x/a.ko"));
        check(module_path_check("/x/a.txt"));
        check(module_path_check("/x/.ko"));
        check(module_path_check("/x/a.ko.bz2"));
        check(module_path_check("/x/a b.ko"));
        check(module_path_check("/x/a.ko/.."));
}

TEST(context) {
        RequestContext c = { .source = SOURCE_UDEV, .devpath = "/devices/pci0000:00/0000:00:03.0",
                             .subsystem = "pci", .action = "add", .seqnum = 1234 };

        check(!request_context_check(&c));
        c.seqnum = -1;
        check(!request_context_check(&c));
        c.seqnum = -2;
        check(request_context_check(&c));
        c.seqnum = 1;
        c.devpath = "/devices/x\n";
        check(request_context_check(&c));
        c.devpath = NULL;
        c.source = _SOURCE_INVALID;
        check(request_context_check(&c));

        check(request_source_from_string("udev") == SOURCE_UDEV);
        check(request_source_from_string("kernel") == SOURCE_KERNEL);
        check(request_source_from_string("boot") == SOURCE_BOOT);
        check(request_source_from_string("admin") == SOURCE_ADMIN);
        check(request_source_from_string("Udev") == _SOURCE_INVALID);
        check(request_source_from_string(NULL) == _SOURCE_INVALID);
        for (RequestSource s = 0; s < _SOURCE_MAX; s++)
                check(request_source_from_string(request_source_to_string(s)) == s);
}

int main(void) {
        RUN(modalias);
        RUN(parameters);
        RUN(path);
        RUN(context);
        return tests_done();
}
