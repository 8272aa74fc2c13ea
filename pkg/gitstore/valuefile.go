package gitstore

// SplitValueFile splits the path of a file in a branch's tree into the stem
// of its key (PathKey turns it into the key) and its extension; ok is false
// for files that hold no value (README.md, .gitattributes …), which the
// store ignores.
func SplitValueFile(path string) (stem, ext string, ok bool) {
	return splitExt(path)
}
