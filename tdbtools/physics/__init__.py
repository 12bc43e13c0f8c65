"""Train physics: forces per car, car-to-car interaction by momentum transfer, and
replays of consists over imported routes (seeds 000, 003, 004; spec §14)."""
