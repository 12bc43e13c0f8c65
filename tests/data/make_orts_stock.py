"""Writes tests/data/orts_stock/: real-format Open Rails stock written from the manual's
token descriptions (UTF-16LE with BOM, CRLF, the SIMISA header), for the Open Rails
physics profile (docs/physics.md §7.8 gives each file's derivation).

Run from the repository root: ``python tests/data/make_orts_stock.py``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent / "orts_stock"
HEADER = "SIMISA@@@@@@@@@@JINX0D0t______\n\n"


def curves(name: str, max_force_kn: float, power_kw: float, speeds: list[float]) -> str:
    """Force curves ``F(t, v) = min(t·Fmax, t·P/v)`` sampled at ``speeds`` (m/s)."""
    lines = [f"\t{name} ("]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        pts = []
        for v in speeds:
            f = t * max_force_kn if v == 0 else min(t * max_force_kn, t * power_kw / v)
            pts.append(f"{v:g} {f * 1000:.0f}")
        lines.append(f"\t\t{t:g} ( {' '.join(pts)} )")
    lines.append("\t)")
    return "\n".join(lines)


DMU_SPEEDS = [0, 2, 5, 10, 15, 20, 25, 30, 35, 40.2]
DMU = f"""Wagon ( DMU_A
\tType ( Engine )
\tMass ( 38.5t )
\tSize ( 2.7m 3.8m 23.2m )
\tWheelRadius ( 0.42m )
\tORTSNumberAxles ( 2 )
\tORTSBearingType ( Roller )
\tORTSDavis_A ( 1200N )
\tORTSDavis_B ( 25N/m/s )
\tORTSDavis_C ( 4.5N/m/s^2 )
\tBrakeSystemType ( "Air_single_pipe" )
\tORTSMaxBrakeShoeForce ( 100kN )
\tORTSBrakeShoeType ( Cast_Iron_P10 )
\tORTSNumberCarBrakeShoes ( 8 )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 3.8bar )
\tMaxReleaseRate ( 4 )
\tMaxApplicationRate ( 14 )
\tMaxAuxilaryChargingRate ( 1.684 )
\tTripleValveRatio ( 2.5 )
\tCoupling ( Type ( Automatic ) Spring ( Stiffness ( 1e6N/m 5e6N/m ) r0 ( 0m 0.05m ) Break ( 1e6N 1e6N ) ) )
)
Engine ( DMU_A
\tType ( Diesel )
\tName ( "Test DMU power car" )
\tWheelRadius ( 0.42m )
\tORTSNumberDriveAxles ( 2 )
\tORTSDriveWheelWeight ( 19t )
\tMaxPower ( 200kW )
\tMaxForce ( 40kN )
\tMaxVelocity ( 90mph )
\tTrainBrakesControllerMaxSystemPressure ( 5bar )
\tTrainBrakesControllerFullServicePressureDrop ( 1.5bar )
\tBrakePipeChargingRate ( 21 )
\tBrakePipeTimeFactor ( 0.003 )
\tBrakeServiceTimeFactor ( 1.009 )
\tBrakeEmergencyTimeFactor ( 0.1 )
{curves("ORTSMaxTractiveForceCurves", 40.0, 200.0, DMU_SPEEDS)}
\tORTSDieselEngines ( 1
\t\tDiesel (
\t\t\tIdleRPM ( 600 )
\t\t\tMaxRPM ( 2100 )
\t\t\tStartingRPM ( 400 )
\t\t\tStartingConfirmRPM ( 570 )
\t\t\tChangeUpRPMpS ( 150 )
\t\t\tChangeDownRPMpS ( 300 )
\t\t\tRateOfChangeUpRPMpSS ( 50 )
\t\t\tRateOfChangeDownRPMpSS ( 200 )
\t\t\tMaximalPower ( 260kW )
\t\t\tIdleExhaust ( 5 )
\t\t\tMaxExhaust ( 50 )
\t\t\tExhaustDynamics ( 10 )
\t\t\tExhaustColor ( 00fefefe )
\t\t\tExhaustTransientColor ( 00000000 )
\t\t\tDieselPowerTab ( 600 0 1000 80000 1400 160000 1750 220000 2100 260000 )
\t\t\tDieselConsumptionTab ( 600 10 2100 70 )
\t\t\tThrottleRPMTab ( 0 600 25 1000 50 1400 75 1750 100 2100 )
\t\t\tDieselTorqueTab ( 600 0 2100 1200 )
\t\t\tMinOilPressure ( 40 )
\t\t\tMaxOilPressure ( 90 )
\t\t\tMaxTemperature ( 120 )
\t\t\tCooling ( 3 )
\t\t\tTempTimeConstant ( 720 )
\t\t\tOptTemperature ( 90 )
\t\t\tIdleTemperature ( 70 )
\t\t)
\t)
)
"""

# The same power car with its cab controllers, written as Open Rails users write such
# files: an include of the original .eng (relative path, odd case), then an Engine block
# with what is added; UTF-8 without BOM, # comments, units in odd case.
DMU_NOTCHED = """Include ( "../DMU_a.ENG" )
Engine ( DMU_N
\tcomment ( "a 7-notch throttle like a British DMU's; a graduated self-lapping brake" )
\tEngineControllers (
\t\tThrottle ( 0 1 0.143 0
\t\t\tNumNotches ( 8
\t\t\t\tNotch ( 0 0 Dummy )
\t\t\t\tNotch ( 0.143 0 Dummy )
\t\t\t\tNotch ( 0.286 0 Dummy )
\t\t\t\tNotch ( 0.429 0 Dummy )
\t\t\t\tNotch ( 0.571 0 Dummy )
\t\t\t\tNotch ( 0.714 0 Dummy )
\t\t\t\tNotch ( 0.857 0 Dummy )
\t\t\t\tNotch ( 1 0 Dummy )
\t\t\t)
\t\t)
\t\tBrake_Train ( 0 1 0.05 0
\t\t\tNumNotches ( 5
\t\t\t\tNotch ( 0 0 TrainBrakesControllerReleaseStart )
\t\t\t\tNotch ( 0.1 0 TrainBrakesControllerRunningStart )
\t\t\t\tNotch ( 0.2 1 TrainBrakesControllerGraduatedSelfLapLimitedStart )
\t\t\t\tNotch ( 0.85 0 TrainBrakesControllerFullServiceStart )
\t\t\t\tNotch ( 1 0 TrainBrakesControllerEmergencyStart )
\t\t\t)
\t\t)
\t)
\tTrainBrakesControllerMinPressureReduction ( 0.4BAR )
\tMaxContinuousForce ( 36KN )
)
"""

# A Co-Co diesel locomotive written the way real British files are (what reading real
# Open Rails stock taught, docs/physics.md §7.8): imperial units (long tons "t-uk", lbf,
# hp, inches, feet and inches), pressure rates in bar/s, Comment ( … ) blocks after values
# on the same line, ORTSCylinderSpringPressure and ORTSBrakePipeChargingRate (Open Rails'
# tokens), a throttle with a smooth notch from 0.1 to 1 directly in the Engine block's
# EngineControllers, a diesel with a Comment inside, curves in N at m/s.
LOCO_CC = f"""Wagon ( LOCO_CC
\tType ( Engine )
\tMass ( 110t-uk )
\tSize ( 2.8m 3.9m 19.4m )
\tORTSLengthBogieCentre ( 37ft 0in )
\tORTSBearingType ( Roller )
\tORTSDavis_A ( 900 )
\tORTSDavis_B ( 40 )
\tORTSDavis_C ( 3.4 )
\tBrakeSystemType ( Air_single_pipe )
\tORTSMaxBrakeShoeForce ( 150000lbf )
\tORTSBrakeShoeType ( Cast_Iron_P6 )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 70psi )
\tORTSCylinderSpringPressure ( 5.0psi )
\tMaxApplicationRate ( 1.5bar/s ) Comment ( a locomotive's quick application )
\tMaxReleaseRate ( 0.5bar/s )
\tMaxAuxilaryChargingRate ( 0.4bar/s )
\tTripleValveRatio ( 2.5 )
)
Engine ( LOCO_CC
\tType ( Diesel )
\tName ( "Test Co-Co diesel" )
\tWheelRadius ( 22.5in )
\tORTSNumberDriveAxles ( 6 )
\tORTSDriveWheelWeight ( 110t-uk )
\tMaxForce ( 55000lbf )
\tMaxVelocity ( 90mph )
\tORTSBrakePipeChargingRate ( 4.5bar/s )
\tTrainBrakesControllerMaxSystemPressure ( 5.0bar )
\tTrainBrakesControllerFullServicePressureDrop ( 1.5bar )
\tEngineControllers (
\t\tThrottle ( 0 1 0.0125 0
\t\t\tNumNotches ( 3
\t\t\t\tNotch( 0.0  0 Dummy )
\t\t\t\tNotch( 0.1  1 Dummy )
\t\t\t\tNotch( 1.0  0 Dummy ) ) )
\t)
{curves("ORTSMaxTractiveForceCurves", 245.0, 1400.0, [0, 2, 4, 6, 8, 10, 15, 20, 30, 40, 45])}
\tORTSDieselEngines ( 1
\t\tDiesel (
\t\t\tIdleRPM ( 325 )
\t\t\tMaxRPM ( 750 )
\t\t\tChangeUpRPMpS ( 50 )
\t\t\tChangeDownRPMpS ( 40 )
\t\t\tRateOfChangeUpRPMpSS ( 10 )
\t\t\tRateOfChangeDownRPMpSS ( 10 )
\t\t\tMaximalPower ( 2500hp )
\t\t\tIdleExhaust ( 4 ) Comment ( 4-stroke = rpm / 80 )
\t\t\tDieselPowerTab ( 0 0 325 100000 450 550000 600 1200000 750 1864250 )
\t\t\tThrottleRPMTab ( 0 325 10 330 40 450 100 750 )
\t\t)
\t)
)
"""

EL_SPEEDS = [0, 5, 10, 15, 20, 25, 30, 40, 50, 55.6]
ELECTRIC = f"""Wagon ( EL_LOCO
\tType ( Engine )
\tMass ( 87t )
\tSize ( 3m 4.3m 19m )
\tWheelRadius ( 0.625m )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 180kN )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 3.8bar )
\tMaxReleaseRate ( 4 )
\tMaxApplicationRate ( 14 )
\tTripleValveRatio ( 2.5 )
)
Engine ( EL_LOCO
\tType ( Electric )
\tName ( "Test Bo'Bo' electric" )
\tWheelRadius ( 0.625m )
\tORTSNumberDriveAxles ( 4 )
\tORTSDriveWheelWeight ( 87t )
\tMaxPower ( 6400kW )
\tMaxForce ( 300kN )
\tMaxContinuousForce ( 250kN )
\tMaxVelocity ( 200km/h )
\tTrainBrakesControllerMaxSystemPressure ( 5bar )
\tTrainBrakesControllerFullServicePressureDrop ( 1.5bar )
\tBrakePipeChargingRate ( 21 )
\tBrakePipeTimeFactor ( 0.003 )
\tBrakeServiceTimeFactor ( 1.009 )
\tBrakeEmergencyTimeFactor ( 0.1 )
\tDynamicBrakesMaximumForce ( 240kN )
\tDynamicBrakesMinUsableSpeed ( 5km/h )
\tDynamicBrakesDelayTimeBeforeEngaging ( 10 )
\tORTSDynamicBrakeForceRampUpRate ( 60kN/s )
\tEngineControllers (
\t\tBrake_Dynamic ( 0 1 0.25 0
\t\t\tNumNotches ( 5
\t\t\t\tNotch ( 0 0 Dummy )
\t\t\t\tNotch ( 0.25 0 Dummy )
\t\t\t\tNotch ( 0.5 0 Dummy )
\t\t\t\tNotch ( 0.75 0 Dummy )
\t\t\t\tNotch ( 1 0 Dummy )
\t\t\t)
\t\t)
\t)
{curves("ORTSMaxTractiveForceCurves", 300.0, 6400.0, EL_SPEEDS)}
{curves("ORTSDynamicBrakeForceCurves", 240.0, 6000.0, EL_SPEEDS)}
)
"""

EMU_SPEEDS = [0, 5, 10, 12.5, 20, 30, 40, 44.5]
EMU_M = f"""Wagon ( EMU_M
\tType ( Engine )
\tMass ( 50t )
\tSize ( 2.9m 4.1m 24m )
\tWheelRadius ( 0.425m )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 60kN )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 3.8bar )
\tMaxApplicationRate ( 14 )
\tMaxReleaseRate ( 4 )
)
Engine ( EMU_M
\tType ( Electric )
\tName ( "Test EMU motor car" )
\tWheelRadius ( 0.425m )
\tORTSNumberDriveAxles ( 4 )
\tORTSDriveWheelWeight ( 50t )
\tMaxPower ( 1000kW )
\tMaxForce ( 80kN )
\tMaxVelocity ( 160km/h )
\tTrainBrakesControllerMaxSystemPressure ( 5bar )
\tTrainBrakesControllerFullServicePressureDrop ( 1.5bar )
{curves("ORTSMaxTractiveForceCurves", 80.0, 1000.0, EMU_SPEEDS)}
)
"""

EMU_T = """Wagon ( EMU_T
\tType ( Carriage )
\tMass ( 36t )
\tSize ( 2.9m 4.1m 24m )
\tWheelRadius ( 0.425m )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 45kN )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 3.8bar )
\tMaxApplicationRate ( 14 )
\tMaxReleaseRate ( 4 )
)
"""

STEAM = """Wagon ( STEAM
\tType ( Engine )
\tMass ( 95t )
\tSize ( 2.8m 4.0m 15m )
\tWheelRadius ( 0.5m )
\tORTSBearingType ( Friction )
\tBrakeSystemType ( "Vacuum_single_pipe" )
\tMaxBrakeForce ( 120kN )
)
Engine ( STEAM
\tType ( Steam )
\tName ( "Test 4-6-2 steam locomotive" )
\tWheelRadius ( 0.94m )
\tORTSNumberDriveAxles ( 3 )
\tORTSDriveWheelWeight ( 60t )
\tMaxPower ( 1500kW )
\tMaxForce ( 120kN )
\tMaxVelocity ( 90mph )
\tNumCylinders ( 2 )
\tCylinderDiameter ( 20in )
\tCylinderStroke ( 26in )
\tMaxBoilerPressure ( 225psi )
)
"""

COACH = """Wagon ( COACH
\tType ( Carriage )
\tMass ( 42t )
\tSize ( 2.825m 4.05m 26.4m )
\tWheelRadius ( 0.46m )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tORTSMaxBrakeShoeForce ( 110kN )
\tORTSBrakeShoeType ( Cast_Iron_P10 )
\tORTSNumberCarBrakeShoes ( 16 )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 3.8bar )
\tMaxReleaseRate ( 4 )
\tMaxApplicationRate ( 14 )
\tMaxAuxilaryChargingRate ( 1.684 )
\tTripleValveRatio ( 2.5 )
)
"""

FREIGHT = """Wagon ( FREIGHT
\tType ( Freight )
\tMass ( 60t )
\tSize ( 3m 3.2m 15.7m )
\tWheelRadius ( 0.46m )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 50kN )
\tORTSBrakeShoeFriction ( 0 0.49 8 0.39 20 0.30 40 0.25 80 0.20 160 0.16 )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 64psi )
\tMaxReleaseRate ( 1.86 )
\tMaxApplicationRate ( 0.9 )
\tMaxAuxilaryChargingRate ( 1.684 )
\tTripleValveRatio ( 2.5 )
)
"""

# A diesel-mechanical DMU power car like a British Class 101 driving motor: written as MSTS
# files for such cars are, with no ORTSDieselEngines (Open Rails builds the engine from the
# DieselEngine* tokens) and the MSTS gearbox tokens: four gears with the top speeds of the
# Wilson epicyclic box (15, 27, 41, 70 mph), their largest forces in N without units, the
# automatic operation, the shift proportions. 32.5 t, 2 × 150 hp written as one 224 kW
# engine, idle 450 / max 1800 RPM at 400 RPM/s (quick enough to follow the shaft in gear 1).
DMU_101 = """Wagon ( DMU101_DMBS
\tType ( Engine )
\tWagonShape ( DMU101_DMBS.s )
\tSize ( 2.82m 3.9m 17.5m )
\tMass ( 32t-uk )
\tWheelRadius ( 0.445m )
\tInertiaTensor ( Box ( 2.8m 3.9m 17.5m ) )
\tORTSDavis_A ( 1300N )
\tORTSDavis_B ( 30N/m/s )
\tORTSDavis_C ( 4N/m/s^2 )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 45kN )
\tCoupling ( Type ( Automatic ) Spring ( Stiffness ( 1e6N/m 5e6N/m ) r0 ( 0m 0.05m ) Break ( 1e6N 1e6N ) ) )
)
Engine ( DMU101_DMBS
\tType ( Diesel )
\tName ( "Class 101 DMBS (test)" )
\tWheelRadius ( 0.445m )
\tMaxPower ( 224kW )
\tMaxForce ( 28kN )
\tMaxVelocity ( 70mph )
\tORTSDriveWheelWeight ( 16t-uk )
\tDieselEngineIdleRPM ( 450 )
\tDieselEngineMaxRPM ( 1800 )
\tDieselEngineMaxRPMChangeRate ( 400 )
\tGearBoxNumberOfGears ( 4 )
\tGearBoxDirectDriveGear ( 4 )
\tGearBoxOperation ( automatic )
\tGearBoxEngineBraking ( direct_drive )
\tGearBoxMaxSpeedForGears ( 15 27 41 70 )
\tGearBoxMaxTractiveForceForGears ( 28000 16000 10500 6200 )
\tGearBoxOverspeedPercentageForFailure ( 150 )
\tGearBoxBackLoadForce ( 1000 )
\tGearBoxCoastingForce ( 500 )
\tGearBoxUpGearProportion ( 0.85 )
\tGearBoxDownGearProportion ( 0.35 )
)
"""

# Vacuum-braked stock (Open Rails' VacuumSinglePipe; docs/physics.md §7.3): bare brake
# pressures are inHg and rates inHg/s, as Open Rails reads them for a vacuum car.
VAC_DMBS = """Wagon ( VAC_DMBS
\tType ( Engine )
\tSize ( 2.82m 3.9m 17.5m )
\tMass ( 32t-uk )
\tWheelRadius ( 0.445m )
\tORTSDavis_A ( 1300N )
\tORTSDavis_B ( 30N/m/s )
\tORTSDavis_C ( 4N/m/s^2 )
\tBrakeSystemType ( "Vacuum_single_pipe" )
\tMaxBrakeForce ( 60kN )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 21 )
\tMaxApplicationRate ( 2.5 )
\tMaxReleaseRate ( 2.5 )
\tORTSBrakeCylinderSize ( 18in )
\tORTSNumberBrakeCylinders ( 2 )
)
Engine ( VAC_DMBS
\tType ( Diesel )
\tName ( "Vacuum-braked DMU power car (test)" )
\tWheelRadius ( 0.445m )
\tMaxPower ( 224kW )
\tMaxForce ( 28kN )
\tMaxVelocity ( 70mph )
\tORTSDriveWheelWeight ( 16t-uk )
\tTrainBrakesControllerMaxSystemPressure ( 21 )
\tBrakePipeChargingRate ( 10 )
\tBrakePipeTimeFactor ( 0.0015 )
\tBrakeServiceTimeFactor ( 3s )
\tBrakeEmergencyTimeFactor ( 1s )
)
"""

VAC_COACH = """Wagon ( VAC_COACH
\tType ( Carriage )
\tMass ( 33t )
\tSize ( 2.8m 3.9m 19.4m )
\tWheelRadius ( 0.46m )
\tORTSBearingType ( Friction )
\tBrakeSystemType ( "Vacuum_single_pipe" )
\tMaxBrakeForce ( 50kN )
\tBrakeCylinderPressureForMaxBrakeBrakeForce ( 21inHg )
\tMaxApplicationRate ( 2.5 )
\tMaxReleaseRate ( 2.5 )
\tORTSBrakeCylinderSize ( 0.4572m )
\tORTSNumberBrakeCylinders ( 2 )
\tORTSDirectAdmissionValve ( 1 )
)
"""

# A coal hopper like a British HAA with Open Rails' freight animations: MassKG is its tare
# (as such files give it), ORTSFreightAnims an empty weight, a continuous coal load full
# at the start (32.3 t) and a static animation (a 0.5 t canopy): Open Rails runs it at
# 13.7 + 32.3 + 0.5 = 46.5 t.
HOPPER = """Wagon ( HAA_HOPPER
\tType ( Freight )
\tWagonShape ( HAA.s )
\tSize ( 2.9m 3.7m 10.8m )
\tMass ( 13.7t )
\tWheelRadius ( 0.46m )
\tNumWheels ( 4 )
\tORTSBearingType ( Roller )
\tBrakeSystemType ( "Air_single_pipe" )
\tMaxBrakeForce ( 60kN )
\tCoupling ( Type ( Automatic ) Spring ( Stiffness ( 1e6N/m 5e6N/m ) r0 ( 0m 0.05m ) Break ( 1e6N 1e6N ) ) )
\tORTSFreightAnims (
\t\tMSTSFreightAnimEnabled ( 0 )
\t\tWagonEmptyWeight ( 13.7t )
\t\tIsGondola ( 0 )
\t\tFreightAnimContinuous (
\t\t\tIntakePoint ( 0.0 6.0 Coal )
\t\t\tShape ( HAA_coal.s )
\t\t\tMaxHeight ( 0.4 )
\t\t\tMinHeight ( -1.2 )
\t\t\tFreightWeightWhenFull ( 32.3t )
\t\t\tFullAtStart ( )
\t\t)
\t\tFreightAnimStatic (
\t\t\tSubType ( Default )
\t\t\tShape ( HAA_canopy.s )
\t\t\tOffset ( 0 0 0 )
\t\t\tFreightWeight ( 0.5t )
\t\t\tFlip ( )
\t\t)
\t)
)
"""

FILES = {
    "dmu/DMU_A.eng": DMU,
    "dmu/notched/DMU_N.eng": DMU_NOTCHED,
    "dmu101/DMU101_DMBS.eng": DMU_101,
    "diesel/LOCO_CC.eng": LOCO_CC,
    "electric/EL_LOCO.eng": ELECTRIC,
    "emu/EMU_M.eng": EMU_M,
    "emu/EMU_T.wag": EMU_T,
    "steam/STEAM.eng": STEAM,
    "wagons/COACH.wag": COACH,
    "wagons/FREIGHT.wag": FREIGHT,
    "wagons/HOPPER.wag": HOPPER,
    "vacuum/VAC_DMBS.eng": VAC_DMBS,
    "vacuum/VAC_COACH.wag": VAC_COACH,
}

#: written as UTF-8 (no BOM, LF), as files edited by hand often are
UTF8 = {"dmu/notched/DMU_N.eng"}


def main() -> None:
    for name, body in FILES.items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name in UTF8:
            path.write_text(HEADER + body, encoding="utf-8", newline="\n")
            continue
        text = (HEADER + body).replace("\n", "\r\n")
        path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))


if __name__ == "__main__":
    main()
