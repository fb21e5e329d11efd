package serve

import (
	"embed"
	"io/fs"
	"net/http"
	"sort"
)

//go:embed console
var consoleFiles embed.FS

// ProfileInfo is a profile as GET /v1/profiles lists it.
type ProfileInfo struct {
	ID          string   `json:"id"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Inventory   []string `json:"tool_ids_inventory"`
}

// ProfileList is the answer of GET /v1/profiles.
type ProfileList struct {
	Profiles []ProfileInfo `json:"profiles"`
}

func (s *Server) listProfiles(w http.ResponseWriter, r *http.Request, c *call) {
	out := ProfileList{Profiles: []ProfileInfo{}}
	for _, p := range c.tenant.Profiles {
		out.Profiles = append(out.Profiles, ProfileInfo{ID: p.ID, Name: p.Name, Description: p.Description, Mode: p.Mode, Inventory: p.Inventory})
	}
	sort.Slice(out.Profiles, func(i, j int) bool { return out.Profiles[i].ID < out.Profiles[j].ID })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) auditHandler(w http.ResponseWriter, r *http.Request, c *call) {
	writeJSON(w, http.StatusOK, c.tenant.Host.Audit())
}

// console serves the embedded web console (static files; the data comes
// from the API with the user's token).
func (s *Server) console(w http.ResponseWriter, r *http.Request, c *call) {
	sub, _ := fs.Sub(consoleFiles, "console")
	h := w.Header()
	// Images only from the server itself or carried in the result
	// (data:): an image on another host would tell that host who reads
	// the result, and when.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(sub, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such file")
		return
	}
	switch {
	case len(name) > 3 && name[len(name)-3:] == ".js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	case len(name) > 4 && name[len(name)-4:] == ".css":
		h.Set("Content-Type", "text/css; charset=utf-8")
	case len(name) > 4 && name[len(name)-4:] == ".svg":
		h.Set("Content-Type", "image/svg+xml")
	default:
		h.Set("Content-Type", "text/html; charset=utf-8")
	}
	w.Write(b)
}
