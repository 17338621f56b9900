package search

import (
	"strings"
	"unicode"
)

// stopWords are dropped from documents and queries: they match nearly every
// description, or only say how a request is worded, and carry no meaning for
// finding a tool.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "by": true, "can": true, "do": true, "does": true, "for": true,
	"from": true, "has": true, "have": true, "how": true, "i": true, "in": true,
	"into": true, "is": true, "it": true, "its": true, "me": true, "my": true,
	"of": true, "on": true, "or": true, "that": true, "the": true, "their": true,
	"them": true, "this": true, "to": true, "was": true, "what": true,
	"which": true, "will": true, "with": true, "you": true, "your": true,
	// how people ask: "I'd need to know", "could we", "let's"
	"want": true, "need": true, "know": true, "please": true, "would": true,
	"could": true, "should": true, "just": true, "we": true, "us": true,
	"our": true, "so": true,
	// what is left of contractions once the apostrophe splits them
	"m": true, "s": true, "t": true, "ll": true, "re": true, "ve": true,
}

// Tokenize splits s into lower-case search terms. Words break at anything that
// is not a letter or digit (so snake_case, kebab-case and dotted names split),
// at camelCase humps ("getHTTPStatus" gives get, http, status) and between
// letters and digits ("base64" gives base, 64). Stop words such as "the" and
// "of" are dropped and plurals are folded ("numbers" gives "number",
// "entities" gives "entity"). Chinese text, written without spaces, gives
// the overlapping pairs of its characters.
func Tokenize(s string) []string {
	var out []string
	runes := []rune(s)
	start := -1
	flush := func(end int) {
		if isHan(runes[start]) {
			out = appendBigrams(out, runes[start:end])
			return
		}
		w := strings.ToLower(string(runes[start:end]))
		if !stopWords[w] {
			out = append(out, stem(w))
		}
	}
	for i, r := range runes {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				flush(i)
			}
			start = -1
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := runes[i-1]
		if unicode.IsLower(prev) && unicode.IsUpper(r) || // getSum
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(runes) && unicode.IsLower(runes[i+1]) || // HTTPServer
			unicode.IsDigit(prev) != unicode.IsDigit(r) || // base64, v2
			isHan(prev) != isHan(r) { // 12306中转, API属性
			flush(i)
			start = i
		}
	}
	if start >= 0 {
		flush(len(runes))
	}
	return out
}

// isHan reports whether r is a Chinese character (also used in Japanese and
// Korean text), which is written without spaces between words.
func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// appendBigrams appends the overlapping pairs of a run of Han characters
// ("经停站" gives 经停, 停站), the usual way to index Chinese without a
// dictionary: a two-character word in a query then matches wherever it is
// written. A run of one character is kept as it is.
func appendBigrams(out []string, run []rune) []string {
	if len(run) == 1 {
		return append(out, string(run))
	}
	for i := 0; i+1 < len(run); i++ {
		out = append(out, string(run[i:i+2]))
	}
	return out
}

// stem folds English plurals, a light touch that keeps terms recognisable:
// entities→entity, processes→process, matches→match, echoes→echo,
// numbers→number; status, analysis and class stay as they are.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"),
		strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "shes"),
		strings.HasSuffix(w, "xes"),
		strings.HasSuffix(w, "zzes"),
		strings.HasSuffix(w, "oes") && len(w) > 4:
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}
