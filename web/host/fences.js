// The trip's fences: drawn on the map (circles, polygons, and circles roaming with a member),
// drawn by the host (a circle: its centre, then a point of its edge; a polygon: its corners,
// then "Finish polygon"), created and deleted through the hub (`fence.create`, `fence.delete`),
// and the fence events listed live from `fences:<trip>` (its recent history first).

const KIND_WORDS = { enter: "entered", exit: "left", inside: "is still in", outside: "is still away from" };

export class FencePanel {
  constructor({ client, map, trip, subscribe, name, notice, elements }) {
    Object.assign(this, { client, map, trip, subscribe, name, notice, elements });
    this.layers = new Map();
    this.fences = new Map();
    this.drawing = null;
    this.onMapClick = (event) => this.click(event.latlng);
    this.onMapMove = (event) => this.preview(event.latlng);
    map?.on("click", this.onMapClick);
    map?.on("mousemove", this.onMapMove);
    elements.circle.onclick = () => this.start("circle");
    elements.polygon.onclick = () => this.start("polygon");
    elements.finish.onclick = () => this.finishPolygon();
    elements.cancel.onclick = () => this.stop();
  }

  async load() {
    const { fences } = await this.client.rpc("fence.list", { trip: this.trip });
    for (const fence of fences) this.add(fence);
    this.render();
    let loaded = false;
    this.subscribe(`fences:${this.trip}`, {
      onSubscribed: async () => {
        if (loaded) return;
        loaded = true;
        const recent = await this.client.history(`fences:${this.trip}`, 20).catch(() => []);
        for (const pub of recent.reverse()) this.event(pub.data);
      },
      onPublication: (data) => this.event(data),
      onError: (error) => this.notice(`Fence events: ${error.message}`),
    });
  }

  // MARK: drawing

  start(kind) {
    if (!this.elements.name.value.trim()) {
      this.hint("Name the fence first.");
      this.elements.name.focus();
      return;
    }
    this.stop();
    this.drawing = { kind, points: [], shape: null };
    this.elements.finish.hidden = kind !== "polygon";
    this.elements.cancel.hidden = false;
    this.hint(kind === "circle" ? "Click the centre of the circle on the map." : "Click each corner on the map, then Finish polygon.");
  }

  stop() {
    this.drawing?.shape?.remove();
    this.drawing = null;
    this.elements.finish.hidden = true;
    this.elements.cancel.hidden = true;
    this.hint("");
  }

  hint(text) {
    this.elements.hint.textContent = text;
  }

  click(latlng) {
    const drawing = this.drawing;
    if (!drawing) return;
    drawing.points.push(latlng);
    if (drawing.kind === "circle") {
      if (drawing.points.length === 1) {
        drawing.shape = L.circle(latlng, { radius: 1, color: "#b54708", dashArray: "4 4" }).addTo(this.map);
        this.hint("Click a point of the circle's edge.");
        return;
      }
      const [centre, edge] = drawing.points;
      const radius = Math.max(1, Math.round(this.map.distance(centre, edge)));
      this.create({ circle: { lat: centre.lat, lon: centre.lng, radius } });
      return;
    }
    drawing.shape?.remove();
    drawing.shape = L.polygon(drawing.points, { color: "#b54708", dashArray: "4 4" }).addTo(this.map);
    this.hint(`${drawing.points.length} corner${drawing.points.length === 1 ? "" : "s"}; Finish polygon when done.`);
  }

  preview(latlng) {
    if (this.drawing?.kind === "circle" && this.drawing.points.length === 1) {
      this.drawing.shape.setRadius(this.map.distance(this.drawing.points[0], latlng));
    }
  }

  finishPolygon() {
    const points = this.drawing?.points || [];
    if (points.length < 3) {
      this.hint("A polygon needs at least 3 corners.");
      return;
    }
    const ring = points.map((p) => [p.lng, p.lat]);
    // GeoJSON's right-hand rule: the outline runs counterclockwise.
    const area = ring.reduce((sum, [x, y], i) => {
      const [nx, ny] = ring[(i + 1) % ring.length];
      return sum + x * ny - nx * y;
    }, 0);
    if (area < 0) ring.reverse();
    ring.push(ring[0]);
    this.create({ geometry: { type: "Polygon", coordinates: [ring] } });
  }

  async create(shape) {
    try {
      const { fence } = await this.client.rpc("fence.create", { trip: this.trip, name: this.elements.name.value.trim(), ...shape });
      this.stop();
      this.elements.name.value = "";
      this.add(fence);
      this.render();
      this.notice("");
    } catch (error) {
      this.stop();
      this.notice(`The fence was refused: ${error.message}`);
    }
  }

  async remove(id) {
    try {
      await this.client.rpc("fence.delete", { trip: this.trip, fence: id });
      this.layers.get(id)?.remove();
      this.layers.delete(id);
      this.fences.delete(id);
      this.render();
    } catch (error) {
      this.notice(`The fence was not deleted: ${error.message}`);
    }
  }

  // MARK: showing

  add(fence) {
    this.fences.set(fence.id, fence);
    if (!this.map) return;
    this.layers.get(fence.id)?.remove();
    const style = { color: "#b54708", weight: 2, fillOpacity: 0.08 };
    let layer = null;
    if (fence.circle) layer = L.circle([fence.circle.lat, fence.circle.lon], { ...style, radius: fence.circle.radius });
    else if (fence.geometry) layer = L.geoJSON(fence.geometry, { style: () => style });
    if (!layer) return; // A roaming fence moves with its member: listed, not drawn.
    layer.bindTooltip(fence.name);
    layer.addTo(this.map);
    this.layers.set(fence.id, layer);
  }

  render() {
    this.elements.list.replaceChildren(...[...this.fences.values()].map((fence) => {
      const item = document.createElement("li");
      item.dataset.fence = fence.id;
      const title = document.createElement("b");
      title.textContent = fence.name;
      const what = fence.circle ? `circle of ${Math.round(fence.circle.radius)} m`
        : fence.roaming ? `within ${Math.round(fence.roaming.radius)} m of ${this.name(fence.roaming.user)}` : "polygon";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "Delete";
      remove.setAttribute("aria-label", `Delete ${fence.name}`);
      remove.onclick = () => this.remove(fence.id);
      item.append(title, document.createTextNode(` ${what} · ${fence.detect.join(", ")} `), remove);
      return item;
    }));
  }

  event(data) {
    if (data.type !== "fence") return;
    const list = this.elements.events;
    if (list.querySelector(`[data-id="${CSS.escape(data.id)}"]`)) return;
    const item = document.createElement("li");
    item.dataset.id = data.id;
    item.dataset.kind = data.event;
    const who = document.createElement("b");
    who.textContent = data.name || this.name(data.user);
    const when = document.createElement("time");
    when.textContent = ` ${new Date(data.ts).toLocaleTimeString()}`;
    item.append(who, document.createTextNode(` ${KIND_WORDS[data.event] || data.event} ${data.fence_name}`), when);
    list.prepend(item);
    while (list.children.length > 50) list.lastChild.remove();
  }

  close() {
    this.stop();
    this.map?.off("click", this.onMapClick);
    this.map?.off("mousemove", this.onMapMove);
    for (const layer of this.layers.values()) layer.remove();
  }
}
