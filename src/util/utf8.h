/*
 * utf8.h - UTF-8 validation and repair for every string Lector emits
 * (JSON, hOCR, TSV, the service's responses).
 *
 * Names and texts come from outside: file names are bytes, a multipart
 * filename is whatever the client sent, a dictionary file may hold any
 * bytes. JSON (RFC 8259) and XML must be valid UTF-8, so such strings are
 * repaired before they are written: each maximal ill-formed subsequence
 * becomes U+FFFD, the Unicode standard's recommended practice (Unicode 15,
 * 3.9 "U+FFFD Substitution of Maximal Subparts", as the WHATWG decoder
 * does). Valid means RFC 3629: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF. NUL ends a string here.
 */
#ifndef LECTOR_UTIL_UTF8_H
#define LECTOR_UTIL_UTF8_H

#include <stddef.h>

/* 1 when the NUL-terminated string s is valid UTF-8 (NULL: 1). */
int lector__utf8_valid(const char *s);

/* A new NUL-terminated copy of s (lector__free) with every maximal
 * ill-formed subsequence replaced by U+FFFD (EF BF BD); a valid s is copied
 * as it is. *replaced (when non-NULL) receives the number of replacements.
 * NULL on allocation failure or when s is NULL. */
char *lector__utf8_repair(const char *s, size_t *replaced);

#endif
