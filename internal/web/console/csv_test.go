package console

import "testing"

// A text cell a spreadsheet would read as a formula is prefixed with '; others,
// and amounts, are written as they are.
func TestCSVText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)", "\tx": "'\tx", "\rx": "'\rx",
		"": "", "ORDER-1": "ORDER-1", "a=b": "a=b", "'quoted": "'quoted", "Ọ̀ṣun ₦": "Ọ̀ṣun ₦",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := amount("1000.50"); got != "1000.50" {
		t.Errorf("amount changed %q", got)
	}
}
