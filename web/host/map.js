// The resort map drawn with Leaflet from the hub's GeoJSON (no tile server needed):
// boundary, lifts and pistes coloured by difficulty with a legend, the elevation under
// the pointer, an optional street tile layer, and the travellers as labelled markers that
// fade with the age of their position.

const DIFFICULTY_NAMES = { novice: "Novice", easy: "Easy", intermediate: "Intermediate", advanced: "Advanced", expert: "Expert", freeride: "Freeride", lift: "Lift" };

export class ResortMap {
  constructor(element, legend, { tilesURL, elevation, onElevation }) {
    this.legend = legend;
    this.markers = new Map();
    this.map = window.L ? L.map(element, { zoomControl: true, attributionControl: false }) : null;
    if (!this.map) return;
    this.map.setView([0, 0], 2);
    if (tilesURL) L.tileLayer(tilesURL, { maxZoom: 19 }).addTo(this.map);
    let last = 0;
    this.map.on("mousemove", async (event) => {
      const now = Date.now();
      if (now - last < 250) return;
      last = now;
      try {
        const answer = await elevation(event.latlng.lat, event.latlng.lng);
        onElevation(`${Math.round(answer.elevation)} m at ${event.latlng.lat.toFixed(4)}, ${event.latlng.lng.toFixed(4)}`);
      } catch {
        onElevation("");
      }
    });
  }

  drawResort(collection) {
    if (!this.map) return;
    const colours = new Map();
    const layer = L.geoJSON(collection, {
      style: (feature) => {
        const p = feature.properties;
        if (p.kind === "boundary") return { color: "#5f6b78", weight: 2, dashArray: "6 4", fill: true, fillOpacity: 0.04 };
        if (p.kind === "base") return { color: "#1d2733", weight: 1, fillOpacity: 0.2 };
        const key = p.kind === "lift" ? "lift" : p.difficulty;
        if (key && p.color) colours.set(key, p.color);
        return { color: p.color || "#333", weight: p.kind === "lift" ? 2 : 4, dashArray: p.kind === "lift" ? "2 6" : null, opacity: 0.9 };
      },
      pointToLayer: (feature, latlng) => L.circleMarker(latlng, { radius: 5 }),
      onEachFeature: (feature, layer) => {
        const p = feature.properties;
        if (p.name && p.kind !== "boundary") layer.bindTooltip(`${p.name}${p.difficulty ? " (" + (DIFFICULTY_NAMES[p.difficulty] || p.difficulty) + ")" : ""}`);
      },
    }).addTo(this.map);
    const bounds = layer.getBounds();
    if (bounds.isValid()) this.map.fitBounds(bounds, { padding: [20, 20] });
    this.legend.replaceChildren(...[...colours.entries()].map(([key, colour]) => {
      const entry = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = colour;
      entry.append(swatch, document.createTextNode(DIFFICULTY_NAMES[key] || key));
      return entry;
    }));
  }

  /** Places every traveller; those not given any more are taken off. */
  showTravellers(travellers) {
    if (!this.map) return;
    const present = new Set();
    for (const t of travellers) {
      present.add(t.user);
      const opacity = t.age < 60_000 ? 1 : t.age < 300_000 ? 0.6 : 0.3;
      let marker = this.markers.get(t.user);
      if (!marker) {
        marker = L.marker([t.lat, t.lon], {
          icon: L.divIcon({ className: "", html: `<span class="traveller-label"></span>`, iconSize: null }),
          keyboard: false,
        }).addTo(this.map);
        marker.getElement()?.setAttribute("data-user", t.user);
        this.markers.set(t.user, marker);
      }
      marker.setLatLng([t.lat, t.lon]);
      marker.setOpacity(opacity);
      const label = marker.getElement()?.querySelector(".traveller-label");
      if (label) label.textContent = t.name;
      marker.getElement()?.setAttribute("data-lat", t.lat);
      marker.getElement()?.setAttribute("data-lon", t.lon);
    }
    for (const [user, marker] of this.markers) {
      if (!present.has(user)) {
        marker.remove();
        this.markers.delete(user);
      }
    }
  }

  centre(position) {
    this.map?.setView([position.lat, position.lon], Math.max(this.map.getZoom(), 15));
  }

  remove() {
    this.map?.remove();
    this.markers.clear();
  }
}
