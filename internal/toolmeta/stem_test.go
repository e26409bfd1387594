package toolmeta

import "testing"

// TestStem checks the stemmer against vectors of Porter's published
// vocabulary (voc.txt / output.txt) and the words the search relies on.
func TestStem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"},
		{"cats", "cat"}, {"feed", "feed"}, {"agreed", "agre"}, {"disabled", "disabl"},
		{"matting", "mat"}, {"mating", "mate"}, {"meeting", "meet"}, {"milling", "mill"},
		{"messing", "mess"}, {"meetings", "meet"}, {"happy", "happi"}, {"sky", "sky"},
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"},
		{"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
		{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
		{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
		{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"},
		{"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"},
		{"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"},
		{"goodness", "good"}, {"revival", "reviv"}, {"allowance", "allow"},
		{"inference", "infer"}, {"airliner", "airlin"}, {"gyroscopic", "gyroscop"},
		{"adjustable", "adjust"}, {"defensible", "defens"}, {"irritant", "irrit"},
		{"replacement", "replac"}, {"adjustment", "adjust"}, {"dependent", "depend"},
		{"adoption", "adopt"}, {"homologou", "homolog"}, {"communism", "commun"},
		{"activate", "activ"}, {"angulariti", "angular"}, {"homologous", "homolog"},
		{"effective", "effect"}, {"bowdlerize", "bowdler"}, {"probate", "probat"},
		{"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		{"generalizations", "gener"}, {"oscillators", "oscil"},
		// The words search depends on.
		{"calculates", "calcul"}, {"calculator", "calcul"}, {"calculated", "calcul"},
		{"calculation", "calcul"}, {"emails", "email"}, {"years", "year"},
		{"interest", "interest"}, {"compound", "compound"},
		// Left alone.
		{"a", "a"}, {"is", "is"}, {"sha256", "sha256"}, {"café", "café"}, {"ies", "i"},
	} {
		if got := stem(tc.in); got != tc.want {
			t.Errorf("stem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
