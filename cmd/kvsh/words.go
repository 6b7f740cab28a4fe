package main

import (
	"errors"
	"fmt"
)

// word is one word of a command line, with quotes and escapes resolved.
type word struct {
	text string
	// literal: part of the word was quoted or escaped, so it is always data,
	// never an option such as limit=N.
	literal bool
}

// splitLine splits a command line into words. Spaces and tabs separate
// words; double quotes keep spaces inside a word ("a b"), and a word may mix
// quoted and bare parts (a"b c" is `ab c`). Inside quotes or out, a
// backslash escapes: \n \r \t \\ \" and \xHH for any byte.
func splitLine(line string) ([]word, error) {
	var (
		words   []word
		cur     []byte
		w       word
		inWord  bool
		inQuote bool
	)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\':
			b, n, err := unescape(line[i:])
			if err != nil {
				return nil, err
			}
			cur = append(cur, b)
			i += n - 1
			inWord, w.literal = true, true
		case c == '"':
			inQuote = !inQuote
			inWord, w.literal = true, true
		case !inQuote && (c == ' ' || c == '\t'):
			if inWord {
				w.text = string(cur)
				words = append(words, w)
				cur, w, inWord = cur[:0], word{}, false
			}
		default:
			cur = append(cur, c)
			inWord = true
		}
	}
	if inQuote {
		return nil, errors.New(`unterminated quote: close it with "`)
	}
	if inWord {
		w.text = string(cur)
		words = append(words, w)
	}
	return words, nil
}

// unescape decodes the escape sequence at the start of s (s[0] is the
// backslash) and returns the byte and the sequence's length.
func unescape(s string) (byte, int, error) {
	if len(s) < 2 {
		return 0, 0, errors.New(`line ends with a lone \`)
	}
	switch s[1] {
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case 't':
		return '\t', 2, nil
	case '\\', '"':
		return s[1], 2, nil
	case 'x':
		if len(s) >= 4 {
			if hi, lo := unhex(s[2]), unhex(s[3]); hi >= 0 && lo >= 0 {
				return byte(hi<<4 | lo), 4, nil
			}
		}
		return 0, 0, fmt.Errorf(`bad escape %s: \x takes two hex digits`, s[:min(len(s), 4)])
	}
	return 0, 0, fmt.Errorf(`unknown escape \%c (use \n \r \t \\ \" or \xHH)`, s[1])
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
