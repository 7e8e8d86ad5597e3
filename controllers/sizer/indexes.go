package sizer

// targetIndex indexes sizers by "<Kind>/<name>" of their target.
const targetIndex = "sizer.keelson.dev/target"

func targetKey(kind, name string) string { return kind + "/" + name }
