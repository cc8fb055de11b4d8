import GondolaHub
import GondolaProtocol

/// `cars:<x>.<y>`: one cell of the live car map. Any signed-in user may subscribe; the
/// subscribe reply's `data` holds the cell's available cars (`{cell, cars, truncated}`),
/// then every change arrives as a publication: `{"type": "car", "car": {...}}` for a car
/// to show (added, returned, moved in, changed) and `{"type": "car_gone", "id", "reason"}`
/// (`rented`, `reserved`, `removed`, `moved`). The channels keep no history: after a
/// reconnect, subscribing again answers the cell as it is.
struct CarChannel: ChannelProvider {
    static let options = NamespaceOptions(name: CarCell.namespace)
    let rentals: RentalService

    func subscribe(_ subscription: ProvidedSubscription, attach: (RawJSON?) throws(HubError) -> Void) async throws(HubError) {
        guard let cell = CarCell(channelSuffix: Substring(subscription.channel.key)) else {
            throw .badRequest(
                "'\(subscription.channel.raw)' is not a car cell: expected cars:<x>.<y> with x and y from 0 to \(CarCell.tiles - 1) (zoom \(CarCell.zoom) tiles)"
            )
        }
        try rentals.subscribe(to: cell, attach: attach)
    }

    func vacated(channel: ChannelName) {}
}
