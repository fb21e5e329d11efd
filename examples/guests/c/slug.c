/* slug: a wasi-command tool written in C (clang + wasi-libc).
 * Reads {"text": "..."} on stdin and writes {"slug": "...", "length": N}:
 * the text lower-cased, ASCII letters and digits kept, every other run of
 * characters turned into one '-', no '-' at either end. A bad input is an
 * {"error": {...}} body and exit status 1, the guest ABI's convention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char in[1 << 20];

static int fail(const char *code, const char *msg) {
    printf("{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, msg);
    return 1;
}

/* find_text returns the start of the JSON string value of key "text" in s,
 * just after its opening quote, or NULL. The host hands the guest compact
 * JSON with sorted keys, so a plain search for the key is enough here. */
static const char *find_text(const char *s) {
    const char *p = strstr(s, "\"text\":\"");
    return p ? p + 8 : NULL;
}

int main(void) {
    size_t n = fread(in, 1, sizeof in - 1, stdin);
    in[n] = 0;
    const char *p = find_text(in);
    if (!p) return fail("BAD_INPUT", "want {\\\"text\\\": string}");
    char *out = malloc(n + 1);
    size_t len = 0;
    int dash = 0;
    for (; *p && *p != '"'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\\' && p[1]) { /* an escape: \" \\ \n \uXXXX ... is a separator */
            p++;
            if (*p == 'u') p += 4;
            c = ' ';
        }
        if (c >= 'A' && c <= 'Z') c = c - 'A' + 'a';
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && len > 0) out[len++] = '-';
            out[len++] = (char)c;
            dash = 0;
        } else {
            dash = 1;
        }
    }
    out[len] = 0;
    printf("{\"slug\":\"%s\",\"length\":%zu}\n", out, len);
    return 0;
}
