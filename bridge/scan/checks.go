package scan

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Codes are the reason codes a [Finding] can have, each with what it means.
var Codes = map[string]string{
	"invisible-unicode":   "characters that do not print: Unicode tag characters (ASCII smuggling), zero-width characters inside words, bidirectional controls",
	"control-character":   "terminal escape sequences or other control characters, which can hide text from a person reading it in a terminal",
	"homoglyph":           "a word that mixes Latin letters with look-alike Cyrillic, Greek or full-width ones",
	"markup":              "markup aimed at the model, such as <IMPORTANT>, <SYSTEM> or [INST]",
	"override":            "an instruction to ignore or override previous instructions",
	"secrecy":             "an instruction to keep something from the user, or to act silently",
	"model-instruction":   "an imperative addressed to the assistant, such as \"before using this tool\" or \"you must\"",
	"context-leak":        "a reference to the conversation, the system prompt or other context the model holds",
	"credential-path":     "a private file or path: ~/.ssh, id_rsa, ~/.aws/credentials, /etc/passwd, mcp.json, .env...",
	"credential":          "a word for a secret: API key, token, password, private key...",
	"pass-along":          "an instruction to put some content into a parameter of the call, or to send it on",
	"send-to":             "an instruction to send, forward or copy data to an address, URL or host",
	"email-address":       "an email address",
	"parameter-tampering": "an instruction to change the recipient, account, amount, path or address of a call",
	"shadowing":           "text about how another tool or server behaves (when X is used, ...), or another server's tool named",
	"encoded-blob":        "a long base64 or hex string that decodes to text",
	"remote-code":         "a command that runs code fetched from the network (curl ... | sh) or opens a shell to a host",
	"schema-too-deep":     "a schema nested deeper than the scanner reads",
	"too-long":            "more text than the scanner reads in one definition",
}

// text scans one field's text. name says it is a name (of the tool or of
// a property): its separators are read as spaces.
func (s *scanner) text(field, raw string, name bool) {
	if raw == "" {
		return
	}
	if s.read+len(raw) > maxText {
		if s.count["too-long"] == 0 {
			s.add("too-long", field, raw[:min(len(raw), 40)], Threshold)
		}
		return
	}
	s.read += len(raw)
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	s.unicode(field, raw)
	t := normalize(raw, name)
	for _, r := range rules {
		for _, m := range r.re.FindAllStringIndex(t, 2) {
			if r.negatable && negated(t[:m[0]]) {
				continue
			}
			w := r.weight
			if name && r.code == "credential-path" {
				w = Threshold // a parameter called after a private file is no prose
			}
			s.add(r.code, field, excerptAt(t, m[0], m[1]), w)
		}
	}
	if name {
		for _, m := range secretName.FindAllStringIndex(t, 1) {
			s.add("credential", field, excerptAt(t, m[0], m[1]), Threshold)
		}
	}
	s.shadowing(field, t)
	s.blobs(field, raw)
}

// normalize is text as the rules read it (they ignore case): without the
// characters that do not print (tag characters become the ASCII they
// encode, so smuggled text is read too), every run of space one space; a
// name's separators and case changes are spaces.
func normalize(text string, name bool) string {
	var b strings.Builder
	b.Grow(len(text))
	space := false
	var prev rune
	for _, r := range text {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			r -= 0xE0000
		case invisible(r) || r >= 0xE0000 && r <= 0xE007F:
			continue
		}
		sep := name && (r == '_' || r == '-' || r == '.')
		if sep || unicode.IsSpace(r) || name && unicode.IsUpper(r) && unicode.IsLower(prev) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
		}
		prev = r
		if sep || unicode.IsSpace(r) {
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports whether r is a zero-width or bidirectional control
// character.
func invisible(r rune) bool {
	switch r {
	case 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD, 0x034F, 0x2061, 0x2062, 0x2063, 0x2064:
		return true
	}
	return bidi(r)
}

func bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// unicode reports characters that do not print and mixed-script words.
func (s *scanner) unicode(field, raw string) {
	runes := []rune(raw)
	for i, r := range runes {
		var why string
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if flagTag(runes, i) {
				continue
			}
			why = "invisible-unicode"
		case bidi(r):
			why = "invisible-unicode"
		case r == 0x200B || r == 0x2060 || r == 0x180E || r == 0x2061 || r == 0x2062 || r == 0x2063 || r == 0x2064 || r == 0xFEFF && i > 0:
			why = "invisible-unicode"
		case (r == 0x200C || r == 0x200D || r == 0x00AD || r == 0x034F) && i > 0 && i+1 < len(runes) && isASCIILetter(runes[i-1]) && isASCIILetter(runes[i+1]):
			// Joiners belong in emoji and in some scripts; between two
			// ASCII letters they only split a word.
			why = "invisible-unicode"
		case r == 0x1B:
			why = "control-character"
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7F || r >= 0x80 && r < 0xA0:
			why = "control-character"
		default:
			continue
		}
		a, b := max(0, i-20), min(len(runes), i+20)
		s.add(why, field, string(runes[a:b]), Threshold)
		return // one is enough to hold it; the excerpt shows it escaped
	}
	for _, w := range strings.FieldsFunc(raw, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) }) {
		if mixedScript(w) {
			s.add("homoglyph", field, w, Threshold)
			return
		}
	}
}

// flagTag reports whether the tag character at runes[i] belongs to an
// emoji flag sequence: U+1F3F4, two to six tag letters or digits, U+E007F.
func flagTag(runes []rune, i int) bool {
	start := i
	for start > 0 && runes[start-1] >= 0xE0000 && runes[start-1] <= 0xE007F {
		start--
	}
	end := i
	for end+1 < len(runes) && runes[end+1] >= 0xE0000 && runes[end+1] <= 0xE007F {
		end++
	}
	if start == 0 || runes[start-1] != 0x1F3F4 || runes[end] != 0xE007F {
		return false
	}
	n := end - start
	if n < 2 || n > 6 {
		return false
	}
	for _, r := range runes[start:end] {
		if !(r >= 0xE0030 && r <= 0xE0039 || r >= 0xE0061 && r <= 0xE007A) {
			return false
		}
	}
	return true
}

func isASCIILetter(r rune) bool { return r < 0x80 && unicode.IsLetter(r) }

// confusableGreek are the Greek letters that look like Latin ones.
const confusableGreek = "αεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"

// mixedScript reports whether w mixes Latin letters with Cyrillic ones,
// with Greek ones that look Latin, or with full-width Latin.
func mixedScript(w string) bool {
	var latin, cyrillic, greek, wide bool
	for _, r := range w {
		switch {
		case r >= 0xFF21 && r <= 0xFF3A || r >= 0xFF41 && r <= 0xFF5A:
			wide = true
		case unicode.Is(unicode.Latin, r):
			latin = true
		case unicode.Is(unicode.Cyrillic, r):
			cyrillic = true
		case strings.ContainsRune(confusableGreek, r):
			greek = true
		}
	}
	return latin && (cyrillic || wide || greek && utf8.RuneCountInString(w) >= 4)
}

// A rule is a pattern over normalized text and the weight of its match.
type rule struct {
	code   string
	weight int
	re     *regexp.Regexp
	// negatable rules do not count after "not" or "never" ("do not pass
	// anything to this parameter").
	negatable bool
}

// negated reports whether before, the text before a match, ends in a
// negation.
func negated(before string) bool {
	before = strings.ToLower(strings.TrimRight(before, " "))
	for _, w := range []string{" not", "n't", " never", " no"} {
		if strings.HasSuffix(before, w) {
			return true
		}
	}
	return false
}

const (
	// toModel is how text addresses the model.
	toModel = `(?:you|the assistant|assistant|the ai|ai assistant|the model|the agent|ai agent|the llm|llm|claude|chatgpt|gpt)`
	// verbsPass are the verbs of putting content somewhere.
	verbsPass = `(?:pass|include|put|insert|append|add|attach|send|forward|provide|copy|embed|paste|fill|supply|upload|transmit|post|share|leak|quote|dump)`
	// secretWord is a word for a secret.
	secretWord = `(?:api[ _-]?keys?|access[ _-]?tokens?|auth(?:entication)?[ _-]?tokens?|secret[ _-]?keys?|private[ _-]?keys?|passwords?|passphrases?|credentials?|bearer tokens?|session (?:cookies?|tokens?)|seed phrases?|mnemonics?|ssh keys?)`
	// privatePath is a file or folder of secrets.
	privatePath = `(?:~/\.ssh|\.ssh/|\bid[_ ]rsa|\bid[_ ]ed25519|\bid[_ ]ecdsa|\bid[_ ]dsa\b|authorized_keys|~/\.aws|\.aws/credentials|/etc/passwd|/etc/shadow|\bmcp\.json|claude_desktop_config|~/\.cursor|\.cursor/|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials|\.config/gh/|\.config/gcloud|\.azure/|\baws[ _/.-]credentials\b|\.docker/config\.json|\.kube/config|\.gnupg|wallet\.dat|(?:^|[\s'"\x60(/])\.env\b|\.bash_history|\.zsh_history|\.bashrc\b|\.zshrc\b|\.bash_profile\b|\.zprofile\b|/proc/self/environ)`
	emailRE     = `[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}`
	hostRE      = `(?:` + emailRE + `|https?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[a-z0-9-]+\.(?:com|net|org|io|xyz|ru|cn|site|top|info|biz|dev|app|co)\b)`
)

var rules = []rule{
	{"markup", Threshold, ci(`<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|critical|override|sys|system[ _-]?prompt|assistant[ _-]?instructions?)\b[^<>]{0,20}>|\[/?(?:inst|system|sys)\]|\[(?:user|system|admin|developer|assistant) (?:message|note|instructions?)\]|<\|im_(?:start|end)\|>|<<\s*/?sys\s*>>|(?:^|\s)#{2,}\s*(?:system|instructions?)\b`), false},
	{"override", Threshold, ci(`\b(?:ignore|disregard|forget|override|bypass|overrule)\s+(?:(?:all|any|the|your|of|these|those)\s+)*(?:previous|prior|above|earlier|preceding|existing|original|system|safety|other|initial)\s+(?:instructions?|rules|prompts?|directions|guidelines|messages|directives|context|constraints)`), false},
	{"override", 2, ci(`\b(?:this(?: tool| description)?|these instructions?)\s+(?:overrides?|supersedes?|takes? precedence over)\b|\bignore (?:its|their|the other) (?:instructions|descriptions)\b|\bnew instructions\s*:|\bsystem (?:override|directive)\b`), false},
	{"secrecy", Threshold, ci(`\b(?:do not|don't|dont|never|must not|should not|shouldn't|without)\s+(?:ever\s+)?(?:tell(?:ing)?|mention(?:ing)?|inform(?:ing)?|notify(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|alert(?:ing)?|let(?:ting)?|report(?:ing)? (?:this )?to|explain(?:ing)? (?:this )?to|show(?:ing)? (?:this )?to)\s+(?:this\s+|that\s+|it\s+)?(?:to\s+)?(?:the\s+)?(?:user|human|person|customer|operator)s?\b`), false},
	{"secrecy", Threshold, ci(`\b(?:user|human)s?\s+(?:must|should|need) not\s+(?:know|see|notice|find out|be (?:told|informed|aware|notified))|\bkeep (?:this|it|these|that) (?:a )?(?:secret|hidden|confidential)\b|\bwithout (?:the )?user'?s? (?:knowledge|knowing|consent|noticing|awareness)|\b(?:secretly|covertly|discreetly|quietly|silently|invisibly)\s+(?:read|send|forward|include|add|call|copy|upload|bcc|cc|pass|append|exfiltrate|collect|transmit|attach|redirect|change|replace|use)\b`), false},
	{"secrecy", Threshold, ci(`\b(?:should|must|need|is) not (?:be )?(?:mentioned|shown|revealed|disclosed|told|reported|explained|visible) to the (?:user|human)\b`), false},
	{"secrecy", Threshold, ci(`,\s*(?:silently|secretly|covertly|quietly|discreetly)\s*(?:[.!]|$)`), false},
	{"secrecy", 2, ci(`\b(?:upset|alarm|scare|worry|confuse) the user\b|\b(?:hide|conceal) (?:this|it|that) from\b|\bdo not (?:mention|reveal|disclose|say|explain) (?:that|this|it|these|any)\b`), false},
	{"model-instruction", 2, ci(`\b(?:before|prior to|after)\s+(?:using|calling|invoking|running|executing|you use|you call)\s+(?:this|the|any)\s+(?:tool|function)\b|\b(?:otherwise|or else)\s+(?:the|this)\s+tool\s+(?:will not|won't|cannot|can't|will fail|does not|doesn't)|\bif you are an? (?:ai|llm|language model|assistant|agent)\b|\bnote (?:to|for) (?:the )?(?:model|assistant|ai|agent|llm)\b|\b(?:the person|the human|the user|whoever is) (?:using|talking to|chatting with|prompting) you\b|\bwhen(?:ever)? the user (?:says|writes|types|sends|mentions|thanks)\b|\bfrom now on\b|\bfor the rest of (?:this|the) (?:session|conversation|chat)\b|\b(?:every|each|any|all) (?:terminal |shell |bash )?commands? (?:you run )?[^.]{0,40}\bmust (?:start|begin|be prefixed|end)\b|(?:^|[.!?]\s+)(?:assistant|claude|ai|agent|model)\s*[,:]\s|\bas an? (?:ai|llm|language model) (?:assistant|agent|model)?\b|\bi (?:authorize|allow|permit|instruct) you to\b|\bno need to (?:confirm|tell)\b`), false},
	{"model-instruction", 1, ci(`\b` + toModel + `\s+(?:must|shall|are required to|is required to|have to|has to|need to|needs to|are instructed to|will now|are now)\b|\b(?:always|first|immediately)\s+(?:call|invoke|run|use|read|execute)\b|\bimportant\s*[:!]`), false},
	{"context-leak", 2, ci(`\b(?:system prompt|(?:full|entire|complete|whole) (?:conversation|chat|transcript)|(?:all|every) (?:previous|prior|earlier) (?:messages?|prompts?|turns?)|conversation (?:so far|up to now)|your context window|everything (?:said|discussed|written|typed|shared) (?:in|during|so far in) (?:this|the) (?:session|conversation|chat|thread))\b`), false},
	{"remote-code", 2, ci(`\b(?:curl|wget)\b[^|\n]{0,120}\|\s*(?:sudo\s+)?(?:ba|z)?sh\b|\bnc\s+-e\b|/dev/tcp/`), false},
	{"context-leak", 1, ci(`\b(?:conversation|chat) history\b`), false},
	{"credential-path", 2, ci(privatePath), false},
	{"credential", 1, ci(`\b` + secretWord + `\b`), false},
	{"credential", 1, regexp.MustCompile(`\b[A-Z][A-Z0-9]*_(?:TOKEN|API_KEY|APIKEY|SECRET|SECRET_KEY|PASSWORD|PASS|ACCESS_KEY|PRIVATE_KEY)\b`), false},
	{"credential", 2, ci(`\b(?:the )?users?'?s? (?:own |bank |master |account |brokerage )?` + secretWord + `\b`), false},
	{"pass-along", 2, ci(`\b(?:` + verbsPass + `|with)\b[^.]{0,60}?\b(?:as|in|into|inside|within|to)\s+(?:the\s+|a\s+)?['"\x60]?[a-z_]+['"\x60]?\s+(?:parameter|param|argument|field|arg)\b|\b` + verbsPass + `\s+(?:its|their|the|this|that|his|her|your)\s+(?:full\s+|entire\s+|complete\s+|whole\s+|raw\s+|chat\s+|conversation\s+)?(?:content|contents|value|values|output|text|results?|history|conversation|transcript)\b|\bcall\s+\S+\s+with\s+(?:the|its|their|all|every|any|full|entire)\b[^.]{0,40}\b(?:contents?|text|history|conversation|tokens?|keys?|passwords?|credentials?|secrets?)\b|\b(?:fill|set|populate)\s+(?:the\s+)?['"\x60]?[a-z_]+['"\x60]?\s+(?:parameter|param|field|argument)\s+with\b`), true},
	{"send-to", 2, ci(`\b(?:send|forward|post|upload|report|transmit|exfiltrate|bcc|cc|copy|redirect|mail|submit|leak|route|deliver|relay|sync|navigate)\b[^.\n]{0,80}?\b(?:to|at|into)\s+['"\x60<(]?` + hostRE), false},
	{"send-to", 2, ci(`\b(?:bcc|cc)\s*:?\s*['"\x60<]?` + emailRE + `|\brecipients?\s+(?:must|should|shall) (?:always )?be\b|\bchange the (?:recipient|destination|address|account|url|endpoint)\b`), false},
	{"parameter-tampering", 2, ci(`\b(?:set|change|replace|switch|overwrite) the (?:account|recipient|destination|address|iban|wallet|payee|amount|url|endpoint|path|to field|sender)\b[^.]{0,30}?\b(?:to|with)\b`), false},
	{"email-address", 1, ci(`\b` + emailRE + `\b`), false},
	{"shadowing", 2, ci(`\b(?:when(?:ever)?|each time|every time|any time)\s+(?:the\s+|a\s+|any\s+)?['"\x60]?[a-z0-9_.-]+['"\x60]?\s+(?:tool|function)\s+is\s+(?:used|called|invoked|available|present|run)|\bside effects? on (?:the )?(?:also present|other|another)\b|\b(?:all|any|every) (?:other )?tools?\s+(?:must|should|need to)\b|\bthis tool (?:must|should) (?:always )?be (?:called|used|run|invoked) (?:before|after|instead of)\b|\binstead of (?:using|calling) (?:the )?\S+ tool\b|\b(?:from|of) (?:any|every|all|another|other) (?:mcp )?servers?\b|\b(?:opened|read|called|used|run|written|sent) (?:by|with|through) (?:any|every|another|other) (?:other )?tools?\b|\bif \S+ is (?:available|present|installed|connected)\b`), false},
}

// secretName is a name that asks for a secret's contents
// (content_from_reading_ssh_key, aws_credentials_file_contents).
var secretName = ci(`\b(?:contents?|reading|read|value) (?:of |from )?(?:the )?(?:\w+ ){0,2}` + secretWord + `|` + secretWord + ` (?:file )?contents?\b`)

// whenCalled is "when X is called" of some tool X: shadowing unless X is
// a tool of the same server.
var whenCalled = ci(`\b(?:when(?:ever)?|each time|every time|any time)\s+(?:the\s+)?['"\x60]?([a-z0-9]+[_.-][a-z0-9_.-]+)['"\x60]?\s+(?:is\s+)?(?:used|called|invoked|runs|is run|executes|starts)\b`)

// ci compiles a pattern that ignores case.
func ci(pattern string) *regexp.Regexp { return regexp.MustCompile(`(?i)` + pattern) }

// behaviour is language that tells how something acts.
var behaviour = ci(`\b(?:must|should|always|never|instead|whenever|when|before|after|redirect|change|replace|override|only|also)\b`)

// shadowing reports another server's tool named in t, with behavioural
// language in the same sentence.
func (s *scanner) shadowing(field, t string) {
	for _, m := range whenCalled.FindAllStringSubmatchIndex(t, 2) {
		if !s.own[strings.ToLower(t[m[2]:m[3]])] {
			s.add("shadowing", field, excerptAt(t, m[0], m[1]), 2)
		}
	}
	t = strings.ToLower(t) // names compare without case; excerpts are of this
	for _, o := range s.others {
		name := strings.ToLower(o.Tool)
		i := wordIndex(t, name)
		if i < 0 {
			continue
		}
		a := strings.LastIndexAny(t[:i], ".!?\n") + 1
		b := strings.IndexAny(t[i:], ".!?\n")
		if b < 0 {
			b = len(t)
		} else {
			b += i
		}
		// Another server's tool named alongside how it is to behave is
		// what shadowing is; named alone, it is a hint.
		w := 1
		if behaviour.MatchString(t[a:b]) {
			w = Threshold
		}
		s.add("shadowing", field, excerptAt(t, i, i+len(name)), w)
	}
}

// wordIndex is the index of word in t standing alone (not part of a longer
// identifier), or -1.
func wordIndex(t, word string) int {
	for off := 0; off < len(t); {
		i := strings.Index(t[off:], word)
		if i < 0 {
			return -1
		}
		i += off
		j := i + len(word)
		if (i == 0 || !identByte(t[i-1])) && (j == len(t) || !identByte(t[j])) {
			return i
		}
		off = i + 1
	}
	return -1
}

func identByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

var (
	base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{40,}={0,2}`)
	hexRun    = regexp.MustCompile(`\b(?:0x)?[0-9a-fA-F]{40,}\b`)
)

// blobs reports long base64 or hex strings that decode to text: an
// instruction hidden from a person reading the description.
func (s *scanner) blobs(field, raw string) {
	for _, m := range hexRun.FindAllStringIndex(raw, 4) {
		h := strings.TrimPrefix(raw[m[0]:m[1]], "0x")
		if b, err := hex.DecodeString(h[:len(h)&^1]); err == nil && textual(b) {
			s.add("encoded-blob", field, excerptAt(raw, m[0], m[1]), Threshold)
			return
		}
	}
	for _, m := range base64Run.FindAllStringIndex(raw, 4) {
		run := raw[m[0]:m[1]]
		if b, ok := decode64(run); ok && textual(b) {
			s.add("encoded-blob", field, excerptAt(raw, m[0], m[1]), Threshold)
			return
		}
	}
}

func decode64(run string) ([]byte, bool) {
	trimmed := strings.TrimRight(run, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		n := len(trimmed) &^ 3 // whole groups only: a run may start or end mid-token
		if b, err := enc.DecodeString(trimmed[:n]); err == nil {
			return b, true
		}
	}
	return nil, false
}

// textual reports whether b reads as words: printable ASCII, with spaces,
// mostly letters.
func textual(b []byte) bool {
	if len(b) < 24 {
		return false
	}
	letters, spaces := 0, 0
	for _, c := range b {
		switch {
		case c == ' ':
			spaces++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		case c >= 0x20 && c < 0x7F || c == '\n' || c == '\t':
		default:
			return false
		}
	}
	return spaces >= 3 && letters*10 >= len(b)*6
}
