/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A small JSON reader and writer for the clients that must start fast (modgate-udev): no library
 * beyond libc. The reader is strict (RFC 8259: one value, nothing after it but white space, valid
 * UTF-8, valid escapes) and builds a small tree; numbers are kept as their text, since the clients
 * only need to know that one is there. Strings holding U+0000 are refused: C strings cannot carry
 * them and no answer of modgated contains one. */

#define JSON_DEPTH_MAX 64U

typedef enum JsonType {
        JSON_NULL,
        JSON_BOOLEAN,
        JSON_NUMBER,
        JSON_STRING,
        JSON_ARRAY,
        JSON_OBJECT,
} JsonType;

typedef struct JsonValue JsonValue;
struct JsonValue {
        JsonType type;
        bool boolean;
        char *text;             /* JSON_STRING: the decoded string; JSON_NUMBER: the number as written */
        size_t n;               /* JSON_ARRAY, JSON_OBJECT: elements */
        char **keys;            /* JSON_OBJECT: n keys */
        JsonValue *items;       /* JSON_ARRAY, JSON_OBJECT: n values */
};

/* Parses size bytes of text. Returns 0 and the tree in *ret; -EBADMSG (syntax, escapes, trailing
 * bytes), -EILSEQ (invalid UTF-8), -ELOOP (nested deeper than JSON_DEPTH_MAX) or -ENOMEM, with the
 * reason in words in *ret_reason (may be NULL) for the first four. */
int json_parse(const char *text, size_t size, JsonValue **ret, const char **ret_reason);
JsonValue *json_free(JsonValue *v);
static inline void json_freep(JsonValue **v) {
        json_free(*v);
}

/* Accessors that take NULL and a value of another type alike, and answer NULL or 0. An object
 * with a key twice answers the last, as sd-json does. */
const JsonValue *json_by_key(const JsonValue *v, const char *key);
const JsonValue *json_by_index(const JsonValue *v, size_t i);
size_t json_elements(const JsonValue *v);       /* of an array; 0 for anything else */
const char *json_string(const JsonValue *v);    /* of a string; NULL for anything else */
bool json_is_array(const JsonValue *v);
bool json_is_object(const JsonValue *v);

/* Whether size bytes are valid UTF-8: shortest forms only, no surrogates, at most U+10FFFF. */
bool utf8_is_valid(const char *s, size_t size);

/* Writes JSON into a growing buffer. Errors stick: the first one is returned by json_writer_finish()
 * and everything after it is ignored. A string that is not valid UTF-8 is -EILSEQ: it is never
 * sent. */
typedef struct JsonWriter {
        char *buf;
        size_t len, cap;
        int error;
        bool comma;             /* the next member or element needs a comma before it */
} JsonWriter;

void json_write_open(JsonWriter *w, char bracket);      /* '{' or '[' */
void json_write_close(JsonWriter *w, char bracket);     /* '}' or ']' */
void json_write_key(JsonWriter *w, const char *key);
void json_write_string(JsonWriter *w, const char *s);
void json_write_unsigned(JsonWriter *w, uint64_t u);
/* Returns 0 and the NUL-terminated text in *ret (the caller frees it), or the first error. */
int json_writer_finish(JsonWriter *w, char **ret, size_t *ret_len);
