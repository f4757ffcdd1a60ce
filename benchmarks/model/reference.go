package model

// reference is a recorded loss curve of the shipped script on healthy
// devices: the model, dtype and device kind, the shape it was recorded
// at, and its points (curvePoints: the mean loss of every ReferenceEvery
// steps). A run at another shape has no shipped reference.
type reference struct {
	Model, DType, Kind   string
	Batch, Width, Layers int
	Points               []float64
}

// references are the shipped curves, recorded with the shipped script at
// its default shape (seed 1234) on the devices vigil has measured; a site
// learns its own from a known-good node (docs/model.md).
// The CPU curves were recorded with Debian 12's python3-torch 1.13.1 (gloo),
// one and two ranks alike. No GPU or NPU curve is shipped yet: on those
// devices the loss is judged finite and falling until a site records one.
var references = []reference{
	{Model: "gpt", DType: "float32", Kind: "cpu", Batch: 16, Points: []float64{3.2209, 2.2556, 2.0604, 2.0482}},
	{Model: "resnet", DType: "float32", Kind: "cpu", Batch: 32, Points: []float64{2.3464, 2.2491, 2.1275, 1.8485, 1.5442, 1.2652}},
}

// lookupReference returns the shipped curve for a run of model at dtype on
// kind with settings s, if one was recorded at that shape.
func lookupReference(model, dtype, kind string, s Settings) ([]float64, bool) {
	for _, r := range references {
		if r.Model == model && r.DType == dtype && r.Kind == kind && r.Batch == s.Batch && r.Width == s.Width && r.Layers == s.Layers {
			return r.Points, true
		}
	}
	return nil, false
}
