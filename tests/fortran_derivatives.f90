! Input derivatives from Fortran (use ktr): the split step trains u' = cos x on [-2, 2] with u(0) = 0 to sin x,
! with derivs(T, m, N) and the seeds as Fortran arrays (dimensions reversed: the sample last), an absent seed and
! an absent derivs for the boundary's empty spec; then ktr_derivatives and ktr_vjp on the trained model, real64;
! then Sobolev targets through ktr_train.
program fortran_derivatives
  use ktr
  use, intrinsic :: iso_fortran_env, only: real32, real64, int64
  implicit none
  integer, parameter :: n = 64
  real(real32) :: x(1, n), u(1, n), du(1, 1, n), seed(1, 1, n), x0(1, 1), u0(1, 1), g0(1, 1), loss, worst
  real(real32) :: labels(2, 1, n)
  real(real64) :: xd(1, n), ud(1, n), dd(2, 1, n), cot(1, n), grad(1, n)
  character(len=*), parameter :: cfg = "fortran_derivatives.yaml"
  integer :: i, step, unit

  open(newunit=unit, file=cfg, status="replace", action="write")
  write(unit, '(a)') "general:", "  seed: 7", "  normalize: none", "model:", "  type: ktr", "  parameters:", &
    '    description: "in=1 dense:24:tanh dense:24:tanh dense:1"', "optimizer:", "  type: adam", "  parameters:", &
    "    learning_rate: 0.01"
  close(unit)
  call check(ktr_create_model("f_pinn", cfg, KTR_DEVICE_DEFAULT), "create")
  do i = 1, n
    x(1, i) = -2.0 + 4.0 * (real(i) - 0.5) / real(n)
  end do
  x0 = 0.0
  do step = 1, 1500
    call check(ktr_jet_forward("f_pinn", "d0", x, u, du), "jet_forward")
    loss = 0.0
    do i = 1, n
      seed(1, 1, i) = 2.0 * (du(1, 1, i) - cos(x(1, i))) / real(n)
      loss = loss + (du(1, 1, i) - cos(x(1, i)))**2 / real(n)
    end do
    call check(ktr_jet_backward("f_pinn", derivs_seed=seed), "jet_backward")
    call check(ktr_jet_forward("f_pinn", "", x0, u0), "jet_forward (boundary)")
    g0 = 2.0 * u0
    call check(ktr_jet_backward("f_pinn", output_seed=g0), "jet_backward (boundary)")
    call check(ktr_apply_gradients("f_pinn", loss + u0(1, 1)**2), "apply_gradients")
  end do
  call check(ktr_inference("f_pinn", x, u), "inference")
  worst = maxval(abs(u(1, :) - sin(x(1, :))))
  print '(a, es10.3)', "fortran_derivatives: largest error against sin x ", worst
  if (worst > 2e-2) error stop "the split step did not train u' = cos x to sin x"
  ! real64 arrays: u' and u'' (d0 and d0,0) of the trained model, and the vjp of cot = 1, which is u'.
  xd = real(x, real64)
  call check(ktr_derivatives("f_pinn", "d0 d0,0", xd, ud, dd), "derivatives")
  if (maxval(abs(dd(1, 1, :) - cos(xd(1, :)))) > 5e-2) error stop "d0 is not cos x"
  if (maxval(abs(dd(2, 1, :) + sin(xd(1, :)))) > 2e-1) error stop "d0,0 is not -sin x"
  cot = 1.0_real64
  call check(ktr_vjp("f_pinn", xd, cot, grad), "vjp")
  if (maxval(abs(grad(1, :) - dd(1, 1, :))) > 1e-5) error stop "the vjp of ones is not d0"
  ! Refused, with the cause named: a backward with no forward.
  if (ktr_jet_backward("f_pinn", output_seed=g0) == KTR_RESULT_SUCCESS) error stop "a backward without a forward"
  if (index(ktr_last_error(), "ktr_jet_forward first") == 0) error stop "the refusal does not say why"
  call check(ktr_destroy_model("f_pinn"), "destroy")
  ! Sobolev targets through ktr_train: labels(1 + T, m, N), here (sin x, cos x) with derivatives "d0" named by the
  ! file; the model's u then follows sin x (within 2e-2) and its d0 cos x (1.2e-2 on a Zen 4, refused above 5e-2).
  open(newunit=unit, file=cfg, status="replace", action="write")
  write(unit, '(a)') "general:", "  seed: 7", "  normalize: none", "model:", "  type: ktr", "  parameters:", &
    '    description: "in=1 dense:24:tanh dense:24:tanh dense:1"', "optimizer:", "  type: adam", "  parameters:", &
    "    learning_rate: 0.005", "loss:", "  type: mse", "  parameters:", '    derivatives: "d0"'
  close(unit)
  call check(ktr_create_model("f_sobolev", cfg, KTR_DEVICE_DEFAULT), "create (Sobolev)")
  do i = 1, n
    labels(1, 1, i) = sin(x(1, i))
    labels(2, 1, i) = cos(x(1, i))
  end do
  do step = 1, 1500
    call check(ktr_train("f_sobolev", x, labels, loss), "train (Sobolev)")
  end do
  call check(ktr_derivatives("f_sobolev", "d0", x, u, du), "derivatives (Sobolev)")
  worst = maxval(abs(du(1, 1, :) - cos(x(1, :))))
  print '(a, es10.3)', "fortran_derivatives: Sobolev d0 against cos x ", worst
  if (worst > 5e-2) error stop "ktr_train on (sin x, cos x) did not train d0 to cos x"
  if (maxval(abs(u(1, :) - sin(x(1, :)))) > 2e-2) error stop "ktr_train on (sin x, cos x) did not train u to sin x"
  call check(ktr_destroy_model("f_sobolev"), "destroy (Sobolev)")
  print '(a)', "fortran_derivatives: ok"
contains
  subroutine check(istat, what)
    integer, intent(in) :: istat
    character(len=*), intent(in) :: what
    if (istat /= KTR_RESULT_SUCCESS) then
      print '(a, a, a)', what, ": ", ktr_last_error()
      error stop 1
    end if
  end subroutine
end program
