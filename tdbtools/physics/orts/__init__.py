"""The Open Rails physics profile's laws (docs/physics.md §7), one small pure module each.

* :mod:`.diesel`: the prime mover's RPM dynamics, the apparent throttle and its power,
  and the engine Open Rails builds from MSTS tokens;
* :mod:`.gearbox`: the legacy (MSTS) automatic gearbox of a geared diesel;
* :mod:`.unit`: one powered car's traction update each step;
* :mod:`.traction`: tractive force (curves, the basic power law, continuous-force
  derating, dynamic braking);
* :mod:`.steam`: a steam locomotive's starting tractive effort and power limit;
* :mod:`.brakes`: brake-shoe friction and the force from the brake cylinder;
* :mod:`.airbrake`: the brake pipe along the train, triple valves and cylinders;
* :mod:`.adhesion`: the adhesion limit of the driven wheels;
* :mod:`.run`: a train run on a straight line of constant grade with these laws (numpy
  only; not yet wired into :mod:`tdbtools.physics.replay`).
"""
