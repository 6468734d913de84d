package webkit

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/boombuler/barcode/qr"
)

// qrQuiet is the light margin around a QR code, in modules (the standard asks
// for four), so a camera finds its edges on any background.
const qrQuiet = 4

// QRCode draws text as a QR code (error correction M) in inline SVG: one path of
// dark modules on a light square, drawn by the page itself, so it needs no
// script, no image request and no image source beyond the page's own CSP. It is
// labelled for screen readers with label.
func QRCode(text, label string) (template.HTML, error) {
	code, err := qr.Encode(text, qr.M, qr.Auto)
	if err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	n := code.Bounds().Dx()
	size := n + 2*qrQuiet
	var path strings.Builder
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if r, _, _, _ := code.At(x, y).RGBA(); r == 0 {
				fmt.Fprintf(&path, "M%d %dh1v1h-1z", x+qrQuiet, y+qrQuiet)
			}
		}
	}
	return template.HTML(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" shape-rendering="crispEdges">`+
		`<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="%s"/></svg>`,
		size, size, size*5, size*5, template.HTMLEscapeString(label), size, size, path.String())), nil
}

// Grouped writes s in groups of four characters separated by spaces ("JBSW
// Y3DP EHPK 3PXP"): how a secret to be typed by hand is shown.
func Grouped(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
