# SPDX-License-Identifier: LGPL-2.1-or-later
"""The scenarios of issue #14, and 8 (the guard's cost) of #23, by number: each run(bench, vm=) returns
(figures, data), data being the raw samples kept as JSON, with "plot": a function that writes the PNG."""

import s1_repeat
import s2_corpus
import s3_storm
import s4_bulk
import s5_helper
import s6_footprint
import s7_vm
import s8_guard

ALL = {
    1: s1_repeat.run,
    2: s2_corpus.run,
    3: s3_storm.run,
    4: s4_bulk.run,
    5: s5_helper.run,
    6: s6_footprint.run,
    7: s7_vm.run,
    8: s8_guard.run,
}
