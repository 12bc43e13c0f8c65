#!/usr/bin/env python3
"""Generate the tdbtools sample rolling stock and consists under sample_routes/sample/TRAINS/.

Standalone on purpose (stdlib only, no tdbtools import): the sample is test data for
tdbtools, so it must not be produced by the code it is meant to test.

Written (UTF-16LE with BOM, CRLF, tabs, line 1 = SIMIS signature ``JINX0D0t``, as MSTS saves
.eng/.wag/.con files):

    TRAINS/TRAINSET/SAMPLE_EL/SAMPLE_EL64.eng          Bo'Bo' electric, ORTSDavis_A/B/C given
    TRAINS/TRAINSET/SAMPLE_DL/SAMPLE_DL66.eng          Co'Co' diesel, MSTS Friction block only
    TRAINS/TRAINSET/SAMPLE_COACH/SAMPLE_BPMZ.wag       UIC-Z coach, roller bearings
    TRAINS/TRAINSET/SAMPLE_FREIGHT/SAMPLE_EANOS.wag    loaded bogie open wagon, plain bearings
    TRAINS/TRAINSET/SAMPLE_COMMON/uic_screw_couplings.inc   shared Coupling blocks (included)
    TRAINS/CONSISTS/sample_passenger.con               electric + 6 coaches
    TRAINS/CONSISTS/sample_freight.con                 diesel + 20 wagons, wagon 8 flipped
    TRAINS/CONSISTS/sample_double.con                  two electrics, the second flipped

Values are written with units the way real files write them (``84t``, ``300kN``,
``200km/h``, ``26.4m``, ``625mm``, ``18.4N/m/s``); their sources are in the files' own
``comment ( … )`` / ``_Comment ( … )`` blocks and in sample_routes/README.md. Some consist
references differ in letter case from the files on disk (``sample_el64`` →
``SAMPLE_EL64.eng``, ``Sample_Eanos`` → ``SAMPLE_EANOS.wag``), as Windows content does.

Deterministic: no clock, no randomness -> byte-identical output on every run.
Run:  python sample_routes/generate_stock.py
"""
from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent / "sample" / "TRAINS"
HEADER = "SIMISA@@@@@@@@@@JINX0D0t______"


def save(rel: str, text: str) -> None:
    """UTF-16LE + BOM, CRLF, like MSTS-saved files (the text uses LF and tabs here)."""
    path = OUT / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = HEADER + "\n\n" + text.strip("\n") + "\n"
    assert "\r" not in text and "\n " not in body, f"{rel}: LF only, indent with tabs"
    path.write_bytes(b"\xff\xfe" + body.replace("\n", "\r\n").encode("utf-16-le"))


# --------------------------------------------------------------------------- couplings
def coupling(stiffness: str, brk: str, r0: str, *, r0_first: bool = False, kind: str = "Chain") -> str:
    """One MSTS Coupling block. ``r0_first`` writes r0 before Stiffness (Open Rails then
    works the slack out from the default stiffness 1e7/2e7 N/m)."""
    spring = [f"Stiffness ( {stiffness} )", "Damping ( 1e6N/m/s 1e6N/m/s )", f"Break ( {brk} )"]
    if r0_first:
        spring.insert(0, f"r0 ( {r0} )")
    else:
        spring.append(f"r0 ( {r0} )")
    inner = "\n".join("\t\t\t" + s for s in spring)
    return (f"\tCoupling (\n\t\tType ( {kind} )\n\t\tSpring (\n{inner}\n\t\t)\n"
            f"\t\tCouplingHasRigidConnection ( 0 )\n\t\tVelocity ( 0.1m/s )\n\t)")


def dedent(block: str) -> str:
    """The include file holds its blocks at top level."""
    return "\n".join(line[1:] if line.startswith("\t") else line for line in block.split("\n"))


UIC_COUPLINGS = f"""
comment ( "Shared part, included by the coach and the freight wagon. UIC screw coupling with side buffers at each end, UIC 520 / UIC 825 class: proof load 850 kN, breaking load 1000 kN. Spring stiffness 1e6 and 5e6 N/m for the draw gear and the buffers. r0 ( 0 10cm ) with Stiffness read first gives Open Rails a free slack of 5 cm x 5e6 / 6e6 = 4.17 cm and a coupler stiffness of 7 x 6e6 = 4.2e7 N/m. First block = slot 0, second = slot 1." )
{dedent(coupling("1e6N/m 5e6N/m", "850kN 1000kN", "0m 10cm"))}
{dedent(coupling("1e6N/m 5e6N/m", "850kN 1000kN", "0m 10cm"))}
"""

# --------------------------------------------------------------------------- electric
ELECTRIC = f"""
Wagon ( SAMPLE_EL64
	comment ( "tdbtools sample stock. A Bo'Bo' AC electric locomotive modelled on the Siemens EuroSprinter / Vectron family: 6400 kW, 300 kN starting tractive effort, 200 km/h; service mass 84 t (Vectron AC 87 to 90 t, ES64U2 86 t); 18.98 m over buffers, 3.01 m wide, 4.25 m high over the lowered pantograph; 1250 mm wheels when new; bogie centres 9.9 m." )
	Type ( Engine )
	WagonShape ( SAMPLE_EL64.s )
	Size ( 3.01m 4.25m 18.98m )
	Mass ( 84t )
	WheelRadius ( 625mm )
	NumWheels ( 4 )
	ORTSLengthBogieCentre ( 9.9m )
	BrakeSystemType ( Air_twin_pipe )
	MaxBrakeForce ( 110kN )
	_Comment ( "Davis running resistance given directly. A and B are close to Open Rails' roller-bearing estimates for 84 t on 4 axles: 938 N and 18.4 N per m/s. C is 5.6 N per m/s squared, for about 12.8 square metres of frontal area with a streamlined cab; the old engine drag constant 0.0024 would give 7.3." )
	ORTSBearingType ( Roller )
	ORTSDavis_A ( 940N )
	ORTSDavis_B ( 18.4N/m/s )
	ORTSDavis_C ( 5.6N/m/s^2 )
	comment ( "Couplings: screw couplings with side buffers, proof 1000 kN, break 1500 kN. Slot 0 lists Stiffness before r0, slot 1 lists r0 first, so Open Rails works out slot 1's free slack from the default stiffness 1e7 and 2e7 N/m: 4 cm x 2/3 = 2.67 cm instead of 4 cm x 5/6 = 3.33 cm. A flipped locomotive uses slot 1." )
{coupling("1e6N/m 5e6N/m", "1000kN 1500kN", "0cm 8cm")}
{coupling("1e6N/m 5e6N/m", "1000kN 1500kN", "0cm 8cm", r0_first=True)}
	Adheasion ( 0.2 0.4 2 0 )
)

Engine ( SAMPLE_EL64
	Name ( "Sample EL 64 Bo-Bo electric" )
	Type ( Electric )
	WheelRadius ( 625mm )
	NumWheels ( 4 )
	ORTSNumberDriveAxles ( 4 )
	MaxPower ( 6400kW )
	MaxForce ( 300kN )
	MaxVelocity ( 200km/h )
	comment ( "No ORTSMaxTractiveForceCurves: Open Rails uses the simple model, force = MaxForce x throttle, limited by MaxPower x throttle squared / speed." )
)
"""

# --------------------------------------------------------------------------- diesel
DIESEL = f"""
Wagon ( SAMPLE_DL66
	comment ( "tdbtools sample stock. A Co'Co' diesel-electric modelled on the EMD JT42CWR, British / European Class 66: 126 t; 21.35 m over buffers, 2.65 m wide, 3.91 m high; 1067 mm wheels; 2400 kW traction power (prime mover 2460 kW); 400 kN starting tractive effort (409 kN quoted), 260 kN continuous; 120 km/h (75 mph)." )
	Type ( Engine )
	WagonShape ( SAMPLE_DL66.s )
	Size ( 2.65m 3.91m 21.35m )
	Mass ( 126t )
	WheelRadius ( 533mm )
	NumWheels ( 6 )
	BrakeSystemType ( Air_single_pipe )
	MaxBrakeForce ( 130kN )
	_Comment ( "MSTS running resistance only: no ORTSDavis values and no ORTSBearingType. Open Rails then converts the Friction block. Its first five values are C1 E1 V2 C2 E2; V2 = 4 mph is at most 10 mph, so they are FCalc data and A, B, C are the least-squares fit of y0 + C2 v^E2, y0 = C1 V2^E1 + C2 V2, over V2 to 80 mph. E1 < 0 makes the standstill force C1 x 0.0025 mph ^ E1, about twice A. The second line, wheel friction in MSTS, is skipped by Open Rails." )
	Friction (
		1500N/m/s -0.1 4mph 18N/m/s 1.8
		5.1N/rad/s 1 -1mph 0 1
	)
	comment ( "Couplings in the style of MSTS default stock: r0 ( 20cm 30cm ). With r0x not 0 Open Rails uses a 0.012 m free slack, 2e7 N/m stiffness and adds r0x = 0.2 m between the cars." )
{coupling("1e6N/m 5e6N/m", "1500kN 2000kN", "20cm 30cm", kind="Automatic")}
{coupling("1e6N/m 5e6N/m", "1500kN 2000kN", "20cm 30cm", kind="Automatic")}
)

Engine ( SAMPLE_DL66
	Name ( "Sample DL 66 Co-Co diesel" )
	Type ( Diesel )
	WheelRadius ( 533mm )
	NumWheels ( 6 )
	ORTSNumberDriveAxles ( 6 )
	MaxPower ( 2400kW )
	MaxForce ( 400kN )
	MaxContinuousForce ( 260kN )
	MaxVelocity ( 120km/h )
)
"""

# --------------------------------------------------------------------------- coach
COACH = """
Wagon ( SAMPLE_BPMZ
	comment ( "tdbtools sample stock. A UIC-Z type second-class open coach, DB Bpmz / DSB B style: 26.4 m over buffers, 2.825 m wide, 4.05 m high; 45 t; four axles in two bogies with roller bearings, bogie centres 19 m; 920 mm wheels; 200 km/h. Davis A and B come from Open Rails' roller-bearing formulas, C from the passenger drag constant 0.00034 times width x height in square feet." )
	Name ( "Sample Bpmz UIC-Z coach" )
	Type ( Carriage )
	WagonShape ( SAMPLE_BPMZ.s )
	Size ( 2.825m 4.05m 26.4m )
	Mass ( 45t )
	WheelRadius ( 460mm )
	NumWheels ( 4 )
	ORTSNumberAxles ( 4 )
	ORTSNumberBogies ( 2 )
	ORTSLengthBogieCentre ( 19m )
	ORTSBearingType ( Roller )
	BrakeSystemType ( Air_twin_pipe )
	MaxBrakeForce ( 50kN )
	include ( "../SAMPLE_COMMON/uic_screw_couplings.inc" )
	PassengerCapacity ( 80 )
)
"""

# --------------------------------------------------------------------------- freight
FREIGHT = """
Wagon ( SAMPLE_EANOS
	comment ( "tdbtools sample stock. A four-axle bogie open wagon of the Eanos type, loaded: 80 t, 20 t per axle of the 22.5 t allowed; 15.74 m over buffers, 3.0 m wide, 3.2 m high; 920 mm wheels; an older build with plain oil journal bearings, 100 km/h loaded. No Davis values: ORTSBearingType Friction makes Open Rails use the 1926 Davis formulas for A and B, C comes from the freight drag constant 0.0005. MaxBrakeForce is left to the 89 kN default." )
	Name ( "Sample Eanos open wagon, loaded" )
	Type ( Freight )
	WagonShape ( SAMPLE_EANOS.s )
	Size ( 3.0m 3.2m 15.74m )
	Mass ( 80t )
	WheelRadius ( 460mm )
	NumWheels ( 4 )
	ORTSNumberAxles ( 4 )
	ORTSBearingType ( Friction )
	BrakeSystemType ( Air_single_pipe )
	include ( ../SAMPLE_COMMON/uic_screw_couplings.inc )
)
"""


# --------------------------------------------------------------------------- consists
def car(kind: str, uid: int, file: str, folder: str, flip: bool = False) -> str:
    data = "EngineData" if kind == "Engine" else "WagonData"
    lines = [f"\t\t{kind} (", f"\t\t\tUiD ( {uid} )"]
    if flip:
        lines.append("\t\t\tFlip ( )")
    lines += [f"\t\t\t{data} ( {file} {folder} )", "\t\t)"]
    return "\n".join(lines)


def consist(label: str, name: str, max_velocity_ms: float, cars: list[str]) -> str:
    return "\n".join([
        "Train (",
        f'\tTrainCfg ( "{label}"',
        f'\t\tName ( "{name}" )',
        "\t\tSerial ( 1 )",
        f"\t\tMaxVelocity ( {max_velocity_ms:.5f} 0.00100 )",
        f"\t\tNextWagonUID ( {len(cars)} )",
        "\t\tDurability ( 1.00000 )",
        *cars,
        "\t)",
        ")",
    ])


EL = ("sample_el64", "SAMPLE_EL")   # file name case differs from SAMPLE_EL64.eng on purpose
DL = ("SAMPLE_DL66", "SAMPLE_DL")
COACH_REF = ("SAMPLE_BPMZ", "SAMPLE_COACH")
WAGON_REF = ("Sample_Eanos", "SAMPLE_FREIGHT")   # ditto
FLIPPED_WAGON = 8                                # UiD (and index) of the reversed wagon


def main() -> None:
    save("TRAINSET/SAMPLE_COMMON/uic_screw_couplings.inc", UIC_COUPLINGS)
    save("TRAINSET/SAMPLE_EL/SAMPLE_EL64.eng", ELECTRIC)
    save("TRAINSET/SAMPLE_DL/SAMPLE_DL66.eng", DIESEL)
    save("TRAINSET/SAMPLE_COACH/SAMPLE_BPMZ.wag", COACH)
    save("TRAINSET/SAMPLE_FREIGHT/SAMPLE_EANOS.wag", FREIGHT)

    passenger = [car("Engine", 0, *EL)] + [car("Wagon", i, *COACH_REF) for i in range(1, 7)]
    save("CONSISTS/sample_passenger.con",
         consist("sample_passenger", "Sample passenger: EL 64 + 6 Bpmz", 200 / 3.6, passenger))
    freight = [car("Engine", 0, *DL)] + [car("Wagon", i, *WAGON_REF, flip=i == FLIPPED_WAGON)
                                         for i in range(1, 21)]
    save("CONSISTS/sample_freight.con",
         consist("sample_freight", "Sample freight: DL 66 + 20 Eanos", 100 / 3.6, freight))
    double = [car("Engine", 0, *EL), car("Engine", 1, *EL, flip=True)]
    save("CONSISTS/sample_double.con",
         consist("sample_double", "Sample double: 2 x EL 64, back to back", 200 / 3.6, double))


if __name__ == "__main__":
    main()
