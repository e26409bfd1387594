package toolmeta

// stem reduces a lowercase ASCII word to its Porter stem (M.F. Porter, "An
// algorithm for suffix stripping", 1980, as in his reference C
// implementation), so that "calculates", "calculated", "calculator" and
// "calculation" all index as "calcul", and "emails" as "email". Words of
// two letters or fewer, and words with anything but a-z, are returned as
// they are.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	s := stemmer{b: append(make([]byte, 0, len(w)+2), w...)}
	s.step1ab()
	if len(s.b) > 1 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	if string(s.b) == w {
		return w
	}
	return string(s.b)
}

// stemmer holds the word being stemmed (b, its end is len(b)-1, Porter's k)
// and j, the end of the stem before a suffix matched by ends.
type stemmer struct {
	b []byte
	j int
}

// cons reports whether b[i] is a consonant: not a vowel, and not a y that
// follows a consonant.
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// m measures b[0..j]: the number of vowel-consonant sequences in it.
func (s *stemmer) m() int {
	n, i := 0, 0
	for {
		if i > s.j {
			return n
		}
		if !s.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > s.j {
				return n
			}
			if s.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > s.j {
				return n
			}
			if !s.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[0..j] has a vowel.
func (s *stemmer) vowelInStem() bool {
	for i := 0; i <= s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[i-1..i] is a double consonant.
func (s *stemmer) doublec(i int) bool {
	return i >= 1 && s.b[i] == s.b[i-1] && s.cons(i)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant and the last is
// not w, x or y (the stem of hop(ing) but not of snow(ing)).
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether the word ends with suffix and then sets j before it.
func (s *stemmer) ends(suffix string) bool {
	n := len(s.b)
	if len(suffix) > n || string(s.b[n-len(suffix):]) != suffix {
		return false
	}
	s.j = n - len(suffix) - 1
	return true
}

// setto replaces the word after j with r.
func (s *stemmer) setto(r string) { s.b = append(s.b[:s.j+1], r...) }

// r replaces the suffix after j with r when the stem's measure is positive.
func (s *stemmer) r(r string) {
	if s.m() > 0 {
		s.setto(r)
	}
}

func (s *stemmer) last() int { return len(s.b) - 1 }

// step1ab removes plurals and -ed or -ing.
func (s *stemmer) step1ab() {
	if s.b[s.last()] == 's' {
		switch {
		case s.ends("sses"):
			s.b = s.b[:len(s.b)-2]
		case s.ends("ies"):
			s.setto("i")
		case s.b[len(s.b)-2] != 's':
			s.b = s.b[:len(s.b)-1]
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.b = s.b[:s.j+1]
		switch {
		case s.ends("at"):
			s.setto("ate")
		case s.ends("bl"):
			s.setto("ble")
		case s.ends("iz"):
			s.setto("ize")
		case s.doublec(s.last()):
			switch s.b[s.last()] {
			case 'l', 's', 'z':
			default:
				s.b = s.b[:len(s.b)-1]
			}
		default:
			s.j = s.last()
			if s.m() == 1 && s.cvc(s.last()) {
				s.b = append(s.b, 'e')
			}
		}
	}
}

// step1c turns a terminal y into i when there is another vowel in the stem.
func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[s.last()] = 'i'
	}
}

// rule is one suffix replacement of steps 2 and 3.
type rule struct{ suffix, repl string }

var step2Rules = map[byte][]rule{
	'a': {{"ational", "ate"}, {"tional", "tion"}},
	'c': {{"enci", "ence"}, {"anci", "ance"}},
	'e': {{"izer", "ize"}},
	'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}},
	'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
	's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
	't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	'g': {{"logi", "log"}},
}

var step3Rules = map[byte][]rule{
	'e': {{"icate", "ic"}, {"ative", ""}, {"alize", "al"}},
	'i': {{"iciti", "ic"}},
	'l': {{"ical", "ic"}, {"ful", ""}},
	's': {{"ness", ""}},
}

func (s *stemmer) apply(rules []rule) {
	for _, r := range rules {
		if s.ends(r.suffix) {
			s.r(r.repl)
			return
		}
	}
}

// step2 maps double suffixes to single ones (-ization to -ize ...).
func (s *stemmer) step2() { s.apply(step2Rules[s.b[len(s.b)-2]]) }

// step3 deals with -ic-, -full, -ness etc.
func (s *stemmer) step3() { s.apply(step3Rules[s.b[s.last()]]) }

var step4Suffixes = map[byte][]string{
	'a': {"al"},
	'c': {"ance", "ence"},
	'e': {"er"},
	'i': {"ic"},
	'l': {"able", "ible"},
	'n': {"ant", "ement", "ment", "ent"},
	'o': {"ion", "ou"},
	's': {"ism"},
	't': {"ate", "iti"},
	'u': {"ous"},
	'v': {"ive"},
	'z': {"ize"},
}

// step4 takes off -ant, -ence etc. in context <c>vcvc<v>.
func (s *stemmer) step4() {
	for _, suf := range step4Suffixes[s.b[len(s.b)-2]] {
		if !s.ends(suf) {
			continue
		}
		if suf == "ion" && (s.j < 0 || (s.b[s.j] != 's' && s.b[s.j] != 't')) {
			continue
		}
		if s.m() > 1 {
			s.b = s.b[:s.j+1]
		}
		return
	}
}

// step5 removes a final -e and turns -ll into -l when the measure allows.
func (s *stemmer) step5() {
	// j stays at the original end throughout, as in the reference
	// implementation: the measure of the second test is the first's.
	s.j = s.last()
	a := -1
	if s.b[s.last()] == 'e' {
		a = s.m()
		if a > 1 || a == 1 && !s.cvc(s.last()-1) {
			s.b = s.b[:len(s.b)-1]
		}
	}
	if s.b[s.last()] == 'l' && s.doublec(s.last()) {
		if a < 0 {
			a = s.m()
		}
		if a > 1 {
			s.b = s.b[:len(s.b)-1]
		}
	}
}
