import GondolaGeo

/// Places with awkward geometry that every spatial test visits.
let testCentres: [GeoPoint] = [
    GeoPoint(lat: 45.3, lon: 6.6),  // the Alps
    GeoPoint(lat: -33.9, lon: 151.2),  // southern hemisphere
    GeoPoint(lat: 0.0, lon: 179.995),  // on the antimeridian
    GeoPoint(lat: 65.0, lon: -179.99),  // antimeridian, far north
    GeoPoint(lat: 89.99, lon: 0),  // the north pole
    GeoPoint(lat: -89.995, lon: 120),  // the south pole
]
