// The resort map drawn with Leaflet from the hub's GeoJSON (no tile server needed):
// boundary, lifts, pistes and piste areas in their difficulty's colour and pattern, a
// legend of the difficulties this resort has, the data's attribution, the elevation
// under the pointer, an optional street tile layer, and the travellers as labelled
// markers that fade with the age of their position.

// Legend order and names; `unrated` is a piste the data gives no difficulty.
const DIFFICULTY_NAMES = {
  novice: "Novice", easy: "Easy", intermediate: "Intermediate", advanced: "Advanced", expert: "Expert",
  freeride: "Freeride", extreme: "Extreme", unrated: "Unrated", lift: "Lift",
};
const DASHES = { solid: null, dashed: "10 6", dotted: "2 6" };
const LIFT_DASHES = "2 6";

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
    const present = new Map();
    // Lifts last, so that they cross over the runs.
    const isLift = (feature) => feature.properties.kind === "lift";
    const drawn = { ...collection, features: [...collection.features.filter((f) => !isLift(f)), ...collection.features.filter(isLift)] };
    const layer = L.geoJSON(drawn, {
      style: (feature) => {
        const p = feature.properties;
        if (p.kind === "boundary") return { color: "#5f6b78", weight: 2, dashArray: "6 4", fill: true, fillOpacity: 0.04 };
        if (p.kind === "base") return { color: "#1d2733", weight: 1, fillOpacity: 0.2 };
        const key = p.kind === "lift" ? "lift" : (p.difficulty || "unrated");
        const dashArray = p.kind === "lift" ? LIFT_DASHES : DASHES[p.pattern] ?? null;
        if (p.color) present.set(key, { color: p.color, dashArray });
        if (p.kind === "piste_area") return { color: p.color, weight: 1, dashArray, fill: true, fillColor: p.color, fillOpacity: 0.25 };
        return { color: p.color || "#333", weight: p.kind === "lift" ? 3 : 4, dashArray, opacity: 0.9 };
      },
      pointToLayer: (feature, latlng) => L.circleMarker(latlng, { radius: 5 }),
      onEachFeature: (feature, layer) => {
        const p = feature.properties;
        const difficulty = p.kind === "piste" || p.kind === "piste_area" ? (p.difficulty || "unrated") : null;
        if (p.name && p.kind !== "boundary") layer.bindTooltip(`${p.name}${difficulty ? " (" + DIFFICULTY_NAMES[difficulty] + ")" : ""}`);
      },
    }).addTo(this.map);
    const resort = collection.resort || {};
    const bounds = resort.bbox ? L.latLngBounds([resort.bbox[1], resort.bbox[0]], [resort.bbox[3], resort.bbox[2]]) : layer.getBounds();
    if (bounds.isValid()) this.map.fitBounds(bounds, { padding: [20, 20] });
    if (resort.attribution) {
      L.control.attribution({ prefix: false }).addAttribution(resort.attribution).addTo(this.map);
    }
    const order = Object.keys(DIFFICULTY_NAMES);
    const keys = [...present.keys()].sort((a, b) => order.indexOf(a) - order.indexOf(b));
    this.legend.replaceChildren(...keys.map((key) => {
      const { color, dashArray } = present.get(key);
      const entry = document.createElement("span");
      entry.dataset.difficulty = key;
      const swatch = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      swatch.setAttribute("width", "28");
      swatch.setAttribute("height", "8");
      const line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      for (const [name, value] of Object.entries({ x1: 0, y1: 4, x2: 28, y2: 4, stroke: color, "stroke-width": key === "lift" ? 3 : 4 })) {
        line.setAttribute(name, value);
      }
      if (dashArray) line.setAttribute("stroke-dasharray", dashArray);
      swatch.append(line);
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
