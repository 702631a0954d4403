/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* What an instance has done since it started, as Status reports it. Event loop thread only. */
typedef struct Counters {
        uint64_t requests;      /* Load calls received */
        uint64_t loads;         /* modules handed to finit_module() that are live */
        uint64_t coalesced;     /* requests that joined a load in flight */
        uint64_t cached;        /* modules answered without a job: live, builtin, a remembered refusal */
        uint64_t denied;        /* modules or requests refused by the policy or on their origin */
        uint64_t failed;
        uint64_t not_found;
        uint64_t refused_callers;
        uint64_t outside_loads;
        uint64_t names_from_path;       /* module files named by their path, .modinfo read after the load */
        uint64_t names_from_modinfo;    /* module files whose .modinfo was read before the load */
        uint64_t names_from_manifest;   /* module files whose .modinfo the manifest listed for their bytes */
} Counters;

/* The latest LATENCY_SAMPLES Load calls' latencies, arrival to reply. */
#define LATENCY_SAMPLES 1024U

typedef struct Latency {
        uint64_t usec[LATENCY_SAMPLES];
        size_t n;               /* samples kept, at most LATENCY_SAMPLES */
        size_t next;            /* where the next one goes */
} Latency;

typedef struct LatencySummary {
        size_t samples;
        uint64_t p50, p90, p99, max;
} LatencySummary;

void latency_add(Latency *l, uint64_t usec);

/* Nearest-rank percentiles of what is kept. Returns 0, or -ENODATA when nothing is. */
int latency_summarize(const Latency *l, LatencySummary *ret);
