/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-plain.h"
#include "macro.h"

typedef struct Parser {
        const char *p, *end;
        unsigned depth;
        const char *reason;
} Parser;

static int fail(Parser *ps, int error, const char *reason) {
        ps->reason = reason;
        return error;
}

/* The length of the UTF-8 sequence at s (at most size bytes), or 0 when it is not valid. */
static size_t utf8_sequence(const unsigned char *s, size_t size) {
        uint32_t c;
        size_t n;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, c = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, c = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, c = s[0] & 0x07;
        else
                return 0;
        if (n > size)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        return n;
}

bool utf8_is_valid(const char *s, size_t size) {
        for (size_t i = 0, n; i < size; i += n) {
                n = utf8_sequence((const unsigned char *) s + i, size - i);
                if (n == 0)
                        return false;
        }
        return true;
}

static void skip_space(Parser *ps) {
        while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
                ps->p++;
}

static bool take_word(Parser *ps, const char *word) {
        size_t n = strlen(word);

        if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
                return false;
        ps->p += n;
        return true;
}

static int hex4(Parser *ps, uint32_t *ret) {
        uint32_t c = 0;

        if (ps->end - ps->p < 4)
                return fail(ps, -EBADMSG, "\\u escape cut short");
        for (size_t i = 0; i < 4; i++) {
                char h = *ps->p++;

                c <<= 4;
                if (h >= '0' && h <= '9')
                        c |= (uint32_t) (h - '0');
                else if (h >= 'a' && h <= 'f')
                        c |= (uint32_t) (h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                        c |= (uint32_t) (h - 'A' + 10);
                else
                        return fail(ps, -EBADMSG, "\\u escape with a non-hex digit");
        }
        *ret = c;
        return 0;
}

/* A \u escape (after the 'u'), a surrogate pair taken whole, as UTF-8 into out (4 bytes at most). */
static int unicode_escape(Parser *ps, char *out, size_t *ret_n) {
        uint32_t c, low;
        int r;

        r = hex4(ps, &c);
        if (r < 0)
                return r;
        if (c >= 0xdc00 && c <= 0xdfff)
                return fail(ps, -EBADMSG, "lone low surrogate in a \\u escape");
        if (c >= 0xd800 && c <= 0xdbff) {
                if (!take_word(ps, "\\u"))
                        return fail(ps, -EBADMSG, "high surrogate without its low half");
                r = hex4(ps, &low);
                if (r < 0)
                        return r;
                if (low < 0xdc00 || low > 0xdfff)
                        return fail(ps, -EBADMSG, "high surrogate without its low half");
                c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        }
        if (c == 0)
                return fail(ps, -EBADMSG, "string holds U+0000");

        if (c < 0x80) {
                out[0] = (char) c;
                *ret_n = 1;
        } else if (c < 0x800) {
                out[0] = (char) (0xc0 | (c >> 6));
                out[1] = (char) (0x80 | (c & 0x3f));
                *ret_n = 2;
        } else if (c < 0x10000) {
                out[0] = (char) (0xe0 | (c >> 12));
                out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
                out[2] = (char) (0x80 | (c & 0x3f));
                *ret_n = 3;
        } else {
                out[0] = (char) (0xf0 | (c >> 18));
                out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
                out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
                out[3] = (char) (0x80 | (c & 0x3f));
                *ret_n = 4;
        }
        return 0;
}

static int simple_escape(Parser *ps, char e, char *ret) {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *f = e ? strchr(from, e) : NULL;

        if (!f)
                return fail(ps, -EBADMSG, "invalid escape in a string");
        *ret = to[f - from];
        return 0;
}

/* The bytes up to the quote that closes the string at p (or to the end), skipping escaped ones. */
static size_t string_extent(const char *p, const char *end) {
        const char *q = p;

        while (q < end && *q != '"')
                q += *q == '\\' && q + 1 < end ? 2 : 1;
        return (size_t) (q - p);
}

/* A string, after its opening quote. Decoded, it is never longer than its text. */
static int parse_string(Parser *ps, char **ret) {
        _cleanup_free_ char *s = malloc(string_extent(ps->p, ps->end) + 1);
        size_t len = 0, n;
        int r;

        if (!s)
                return -ENOMEM;
        for (;;) {
                unsigned char c;

                if (ps->p >= ps->end)
                        return fail(ps, -EBADMSG, "unterminated string");
                c = (unsigned char) *ps->p;
                if (c == '"') {
                        ps->p++;
                        break;
                }
                if (c < 0x20)
                        return fail(ps, -EBADMSG, "control character in a string");
                if (c == '\\') {
                        ps->p++;
                        if (ps->p < ps->end && *ps->p == 'u') {
                                ps->p++;
                                r = unicode_escape(ps, s + len, &n);
                        } else {
                                n = 1;
                                r = simple_escape(ps, ps->p < ps->end ? *ps->p++ : 0, s + len);
                        }
                        if (r < 0)
                                return r;
                        len += n;
                        continue;
                }
                n = utf8_sequence((const unsigned char *) ps->p, (size_t) (ps->end - ps->p));
                if (n == 0)
                        return fail(ps, -EILSEQ, "string is not valid UTF-8");
                memcpy(s + len, ps->p, n);
                ps->p += n;
                len += n;
        }
        s[len] = '\0';
        *ret = TAKE_PTR(s);
        return 0;
}

static size_t skip_digits(Parser *ps) {
        const char *start = ps->p;

        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
                ps->p++;
        return (size_t) (ps->p - start);
}

static int parse_number(Parser *ps, JsonValue *v) {
        const char *start = ps->p;

        if (ps->p < ps->end && *ps->p == '-')
                ps->p++;
        if (ps->p < ps->end && *ps->p == '0')
                ps->p++;
        else if (skip_digits(ps) == 0)
                return fail(ps, -EBADMSG, "invalid number");
        if (ps->p < ps->end && *ps->p == '.') {
                ps->p++;
                if (skip_digits(ps) == 0)
                        return fail(ps, -EBADMSG, "invalid number");
        }
        if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
                ps->p++;
                if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
                        ps->p++;
                if (skip_digits(ps) == 0)
                        return fail(ps, -EBADMSG, "invalid number");
        }
        v->type = JSON_NUMBER;
        v->text = strndup(start, (size_t) (ps->p - start));
        return v->text ? 0 : -ENOMEM;
}

static int parse_value(Parser *ps, JsonValue *v);

/* Members or elements, after the opening bracket, up to and including the closing one. */
static int parse_container(Parser *ps, JsonValue *v, char close) {
        bool object = close == '}';
        size_t cap = 0;
        int r;

        v->type = object ? JSON_OBJECT : JSON_ARRAY;
        if (++ps->depth > JSON_DEPTH_MAX)
                return fail(ps, -ELOOP, "nested too deeply");
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                ps->depth--;
                return 0;
        }
        for (;;) {
                if (v->n == cap) {
                        JsonValue *items;

                        cap = MAX(cap * 2, (size_t) 4);
                        items = reallocarray(v->items, cap, sizeof(JsonValue));
                        if (!items)
                                return -ENOMEM;
                        v->items = items;
                        if (object) {
                                char **keys = reallocarray(v->keys, cap, sizeof(char *));

                                if (!keys)
                                        return -ENOMEM;
                                v->keys = keys;
                        }
                }
                v->items[v->n] = (JsonValue) {};
                if (object)
                        v->keys[v->n] = NULL;
                v->n++;

                if (object) {
                        skip_space(ps);
                        if (ps->p >= ps->end || *ps->p != '"')
                                return fail(ps, -EBADMSG, "object key is not a string");
                        ps->p++;
                        r = parse_string(ps, &v->keys[v->n - 1]);
                        if (r < 0)
                                return r;
                        skip_space(ps);
                        if (ps->p >= ps->end || *ps->p++ != ':')
                                return fail(ps, -EBADMSG, "no ':' after an object key");
                }
                r = parse_value(ps, &v->items[v->n - 1]);
                if (r < 0)
                        return r;
                skip_space(ps);
                if (ps->p < ps->end && *ps->p == ',') {
                        ps->p++;
                        continue;
                }
                if (ps->p < ps->end && *ps->p == close) {
                        ps->p++;
                        ps->depth--;
                        return 0;
                }
                return fail(ps, -EBADMSG, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
}

static int parse_value(Parser *ps, JsonValue *v) {
        skip_space(ps);
        if (ps->p >= ps->end)
                return fail(ps, -EBADMSG, "unexpected end of input");

        switch (*ps->p) {
        case '{':
        case '[':
                return parse_container(ps, v, *ps->p++ == '{' ? '}' : ']');
        case '"':
                ps->p++;
                v->type = JSON_STRING;
                return parse_string(ps, &v->text);
        case 't':
        case 'f':
        case 'n':
                if (take_word(ps, "true") || take_word(ps, "false")) {
                        v->type = JSON_BOOLEAN;
                        v->boolean = ps->p[-1] == 'e' && ps->p[-2] == 'u';
                        return 0;
                }
                if (take_word(ps, "null"))
                        return 0;
                return fail(ps, -EBADMSG, "invalid literal");
        default:
                if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
                        return parse_number(ps, v);
                return fail(ps, -EBADMSG, "unexpected character");
        }
}

static void json_clear(JsonValue *v) {
        for (size_t i = 0; i < v->n; i++) {
                json_clear(v->items + i);
                if (v->keys)
                        free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
        free(v->text);
}

JsonValue *json_free(JsonValue *v) {
        if (v) {
                json_clear(v);
                free(v);
        }
        return NULL;
}

int json_parse(const char *text, size_t size, JsonValue **ret, const char **ret_reason) {
        _cleanup_(json_freep) JsonValue *v = calloc(1, sizeof(JsonValue));
        Parser ps = { .p = text, .end = text + size };
        int r;

        if (!v)
                return -ENOMEM;
        r = parse_value(&ps, v);
        if (r >= 0) {
                skip_space(&ps);
                if (ps.p < ps.end)
                        r = fail(&ps, -EBADMSG, "trailing bytes after the value");
        }
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = r == -ENOMEM ? "out of memory" : ps.reason;
                return r;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

const JsonValue *json_by_key(const JsonValue *v, const char *key) {
        if (!json_is_object(v))
                return NULL;
        for (size_t i = v->n; i > 0; i--)
                if (strcmp(v->keys[i - 1], key) == 0)
                        return v->items + i - 1;
        return NULL;
}

const JsonValue *json_by_index(const JsonValue *v, size_t i) {
        return json_is_array(v) && i < v->n ? v->items + i : NULL;
}

size_t json_elements(const JsonValue *v) {
        return json_is_array(v) ? v->n : 0;
}

const char *json_string(const JsonValue *v) {
        return v && v->type == JSON_STRING ? v->text : NULL;
}

bool json_is_array(const JsonValue *v) {
        return v && v->type == JSON_ARRAY;
}

bool json_is_object(const JsonValue *v) {
        return v && v->type == JSON_OBJECT;
}

static void put(JsonWriter *w, const char *s, size_t n) {
        if (w->error < 0)
                return;
        if (w->len + n + 1 > w->cap) {
                size_t cap = MAX(w->cap * 2, w->len + n + 1);
                char *b = realloc(w->buf, MAX(cap, (size_t) 256));

                if (!b) {
                        w->error = -ENOMEM;
                        return;
                }
                w->buf = b;
                w->cap = MAX(cap, (size_t) 256);
        }
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        w->buf[w->len] = '\0';
}

static void separate(JsonWriter *w) {
        if (w->comma)
                put(w, ",", 1);
        w->comma = true;
}

void json_write_open(JsonWriter *w, char bracket) {
        separate(w);
        put(w, &bracket, 1);
        w->comma = false;
}

void json_write_close(JsonWriter *w, char bracket) {
        put(w, &bracket, 1);
        w->comma = true;
}

static void write_quoted(JsonWriter *w, const char *s) {
        size_t n = strlen(s);

        if (!utf8_is_valid(s, n)) {
                if (w->error == 0)
                        w->error = -EILSEQ;
                return;
        }
        put(w, "\"", 1);
        for (const char *p = s; *p; p++) {
                unsigned char c = (unsigned char) *p;
                char esc[8];

                if (c == '"' || c == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char) c;
                        put(w, esc, 2);
                } else if (c < 0x20 || c == 0x7f) {
                        snprintf(esc, sizeof(esc), "\\u%04x", c);
                        put(w, esc, 6);
                } else
                        put(w, p, 1);
        }
        put(w, "\"", 1);
}

void json_write_key(JsonWriter *w, const char *key) {
        separate(w);
        write_quoted(w, key);
        put(w, ":", 1);
        w->comma = false;
}

void json_write_string(JsonWriter *w, const char *s) {
        separate(w);
        write_quoted(w, s);
}

void json_write_unsigned(JsonWriter *w, uint64_t u) {
        char buf[24];

        separate(w);
        put(w, buf, (size_t) snprintf(buf, sizeof(buf), "%" PRIu64, u));
}

int json_writer_finish(JsonWriter *w, char **ret, size_t *ret_len) {
        int r = w->error;

        if (r == 0 && !w->buf)
                r = -EINVAL;
        if (r < 0) {
                free(w->buf);
                *w = (JsonWriter) {};
                return r;
        }
        *ret = TAKE_PTR(w->buf);
        if (ret_len)
                *ret_len = w->len;
        *w = (JsonWriter) {};
        return 0;
}
